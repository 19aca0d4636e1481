import type * as http2 from "node:http2";
import { create, type DescMessage, type Message, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import type { RequestDecoder } from "./request-decoder.ts";
import { type MethodRoute, methodPath } from "./rpc.ts";
import { grpcStatusDetails, malformedTimeout, toRpcError } from "./rpc-errors.ts";
import { streamSendBudget } from "./turn-budget.ts";

/**
 * Serves transport-neutral method implementations (connect-es shapes) with @grpc/grpc-js, which is
 * several times faster than connect-node's gRPC path for native gRPC clients.
 *
 * Requests arrive as raw bytes and are decoded here (large ones off the event loop, by `decoder`),
 * so a malformed message is INVALID_ARGUMENT (grpc-js would answer INTERNAL for a deserializer that
 * throws), worded as on every protocol.
 */
export function addRoutesToGrpcServer(
  server: grpc.Server,
  routes: readonly MethodRoute[],
  shutdownSignal: AbortSignal,
  decoder: RequestDecoder,
): void {
  const byService = new Map<string, MethodRoute[]>();
  for (const route of routes) {
    const serviceName = route.method.parent.typeName;
    const list = byService.get(serviceName) ?? [];
    list.push(route);
    byService.set(serviceName, list);
  }
  for (const serviceRoutes of byService.values()) {
    const definition: Record<string, grpc.MethodDefinition<Buffer, Message | Buffer>> = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const route of serviceRoutes) {
      const { method } = route;
      const kind = method.methodKind;
      definition[method.name] = {
        path: methodPath(method),
        requestStream: kind === "client_streaming" || kind === "bidi_streaming",
        responseStream: kind === "server_streaming" || kind === "bidi_streaming",
        requestSerialize: (bytes: Buffer) => bytes,
        requestDeserialize: (bytes: Buffer) => bytes,
        responseSerialize: (message: Message | Buffer) =>
          Buffer.isBuffer(message) ? message : Buffer.from(toBinary(method.output, message)),
        responseDeserialize: (bytes: Buffer) => bytes,
      };
      handlers[method.name] = makeHandler(route, shutdownSignal, decoder);
    }
    server.addService(definition as grpc.ServiceDefinition, handlers);
  }
}

type AnyCall =
  | grpc.ServerUnaryCall<Buffer, Message>
  | grpc.ServerWritableStream<Buffer, Buffer>
  | grpc.ServerDuplexStream<Buffer, Buffer>;

function makeHandler(
  route: MethodRoute,
  shutdownSignal: AbortSignal,
  decoder: RequestDecoder,
): grpc.UntypedHandleCall {
  const { method } = route;
  const decode = (bytes: Buffer) => decoder.decode(method.input, bytes);
  const toMessage = (value: MessageInitShape<DescMessage>) => create(method.output, value);
  // Streamed messages are encoded here, when the handler yields them (where a handler can slice its
  // work over turns of the event loop), not later by grpc-js when an earlier write completes: there,
  // the buffered messages of hundreds of streams would all be encoded in one turn.
  // A message object several streams send (one event to every watcher, services/watch.ts) is
  // encoded once.
  const encoded = new WeakMap<object, Buffer>();
  const encode = (value: MessageInitShape<DescMessage>) => {
    let bytes = encoded.get(value);
    if (bytes === undefined) {
      bytes = Buffer.from(toBinary(method.output, toMessage(value)));
      encoded.set(value, bytes);
    }
    return bytes;
  };

  switch (route.kind) {
    case "unary": {
      const { impl } = route;
      return (call: grpc.ServerUnaryCall<Buffer, Message>, callback: grpc.sendUnaryData<Message>) => {
        const context = contextFor(route, call, shutdownSignal);
        Promise.resolve()
          .then(() => decode(call.request))
          .then((input) => impl(input, context))
          .then(
            (output) => {
              sendHeaders(call, context);
              callback(null, toMessage(output), trailerMetadata(context));
            },
            (error: unknown) => {
              sendHeaders(call, context);
              callback(toServiceError(error, context));
            },
          )
          .finally(() => context.end());
      };
    }
    case "server_streaming": {
      const { impl } = route;
      return (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        const context = contextFor(route, call, shutdownSignal);
        void (async () => {
          try {
            await sendAll(call, impl(await decode(call.request), context), encode, context);
            call.end(trailerMetadata(context));
          } catch (error) {
            call.emit("error", toServiceError(error, context));
          } finally {
            context.end();
          }
        })();
      };
    }
    case "bidi_streaming": {
      const { impl } = route;
      return (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        const context = contextFor(route, call, shutdownSignal);
        const requests = (async function* () {
          // Keep the call open when the client half-closes: the answers still have to go out.
          for await (const chunk of call.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
            yield await decode(chunk);
          }
        })();
        void (async () => {
          try {
            await sendAll(call, impl(requests, context), encode, context);
            call.end(trailerMetadata(context));
          } catch (error) {
            call.emit("error", toServiceError(error, context));
          } finally {
            context.end();
          }
        })();
      };
    }
    case "client_streaming":
      throw new Error(`${method.methodKind} methods are not served over grpc-js (${methodPath(method)})`);
  }
}

function contextFor(route: MethodRoute, call: AnyCall, shutdownSignal: AbortSignal): GrpcCallContext {
  const context = new GrpcCallContext(route, call.metadata, call.getDeadline(), shutdownSignal);
  // grpc-js also reports 'cancelled' once the call has ended normally; by then end() has run.
  (call as NodeJS.EventEmitter).on("cancelled", () => {
    if (!context.ended) context.end(new ConnectError("call cancelled by the client", Code.Canceled));
  });
  return context;
}

/**
 * The HandlerContext connect's createHandlerContext would build, made lazily: the abort signal (with
 * its deadline timer and shutdown link) and the header objects exist only once a handler touches
 * them; most unary handlers never do. Under load, building them for every call (and aborting them
 * again on grpc-js's after-the-call 'cancelled' event, with a ConnectError and its stack trace) was
 * over a quarter of the server's CPU for Health/Check.
 *
 * Same contract: `signal` aborts on the deadline (DEADLINE_EXCEEDED), on server shutdown, when the
 * client cancels (CANCELED), and when the call completes (plain AbortError, as connect-node does).
 */
class GrpcCallContext implements HandlerContext {
  readonly service: HandlerContext["service"];
  readonly method: HandlerContext["method"];
  readonly protocolName = "grpc";
  readonly requestMethod = "POST";
  readonly url: string;
  readonly values: ContextValues = createContextValues();
  ended = false;
  private readonly metadata: grpc.Metadata;
  private readonly shutdownSignal: AbortSignal;
  /** Epoch ms, or undefined without a deadline. */
  private readonly deadlineAt: number | undefined;
  private endReason: unknown;
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unlink: (() => void) | undefined;
  private requestHeaderRead: Headers | undefined;
  private responseHeaderMade: Headers | undefined;
  private responseTrailerMade: Headers | undefined;

  constructor(
    route: MethodRoute,
    metadata: grpc.Metadata,
    deadline: grpc.Deadline,
    shutdownSignal: AbortSignal,
  ) {
    this.service = route.method.parent;
    this.method = route.method;
    this.url = methodPath(route.method);
    this.metadata = metadata;
    this.shutdownSignal = shutdownSignal;
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : Number(deadline);
    this.deadlineAt =
      Number.isFinite(deadlineMs) && deadlineMs > 0 ? Math.max(deadlineMs, Date.now()) : undefined;
  }

  /** A getter rather than an instance arrow: no closure per call for a function handlers rarely call. */
  get timeoutMs(): () => number | undefined {
    const deadlineAt = this.deadlineAt;
    return () => (deadlineAt === undefined ? undefined : deadlineAt - Date.now());
  }

  get requestHeader(): Headers {
    if (!this.requestHeaderRead) {
      const header = new Headers();
      for (const [key, value] of Object.entries(this.metadata.getMap())) {
        if (typeof value === "string") header.set(key, value);
      }
      this.requestHeaderRead = header;
    }
    return this.requestHeaderRead;
  }

  get responseHeader(): Headers {
    this.responseHeaderMade ??= new Headers();
    return this.responseHeaderMade;
  }

  get responseTrailer(): Headers {
    this.responseTrailerMade ??= new Headers();
    return this.responseTrailerMade;
  }

  /** The trailers a handler set, without creating the object when it set none. */
  get trailersIfAny(): Headers | undefined {
    return this.responseTrailerMade;
  }

  /** Response headers a handler or the pipeline set (e.g. `wayfind-stale`), taken once to be sent. */
  takeHeaders(): Headers | undefined {
    const header = this.responseHeaderMade;
    this.responseHeaderMade = undefined;
    return header;
  }

  get signal(): AbortSignal {
    if (this.controller) return this.controller.signal;
    const controller = new AbortController();
    this.controller = controller;
    const shutdownSignal = this.shutdownSignal;
    if (this.ended) {
      controller.abort(this.endReason);
    } else if (shutdownSignal.aborted) {
      this.end(abortReason(shutdownSignal));
    } else if (this.deadlineAt !== undefined && this.deadlineAt <= Date.now()) {
      this.end(deadlineExceeded());
    } else {
      const onShutdown = () => this.end(abortReason(shutdownSignal));
      shutdownSignal.addEventListener("abort", onShutdown);
      this.unlink = () => shutdownSignal.removeEventListener("abort", onShutdown);
      if (this.deadlineAt !== undefined)
        this.timer = setTimeout(() => this.end(deadlineExceeded()), this.deadlineAt - Date.now());
    }
    return controller.signal;
  }

  /** Ends the call's context once: aborts `signal` with `reason` (undefined: a plain AbortError). */
  end(reason?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.endReason = reason;
    const controller = this.controller;
    if (!controller) return;
    clearTimeout(this.timer);
    this.unlink?.();
    controller.abort(reason);
  }
}

function deadlineExceeded(): ConnectError {
  return new ConnectError("the operation timed out", Code.DeadlineExceeded);
}

function abortReason(signal: AbortSignal): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const error = new Error("This operation was aborted");
  error.name = "AbortError";
  return error;
}

/**
 * Writes every message of a stream, with backpressure; each encoding and write is metered by the
 * budget all streams share, so a burst to hundreds of streams is spread over turns of the event loop.
 */
async function sendAll(
  call: grpc.ServerWritableStream<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>,
  messages: AsyncIterable<MessageInitShape<DescMessage>>,
  encode: (message: MessageInitShape<DescMessage>) => Buffer,
  context: GrpcCallContext,
): Promise<void> {
  const iterator = messages[Symbol.asyncIterator]();
  try {
    for (;;) {
      // Making the next message (for the first: the call's authentication and subscription) and
      // sending it both take their turn's budget: hundreds of streams opened by one read of a
      // connection, or one event fanned out to all of them, are spread over turns.
      const next = await streamSendBudget.run(() => iterator.next());
      if (next.done) return;
      const written = await streamSendBudget.run(() => {
        sendHeaders(call, context);
        return call.write(encode(next.value));
      });
      if (!written) await waitForDrain(call, context.signal);
    }
  } catch (error) {
    await iterator.return?.();
    throw error;
  }
}

function waitForDrain(call: NodeJS.EventEmitter, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      call.off("drain", onDrain);
      reject(signal.reason);
    };
    const onDrain = () => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    };
    call.once("drain", onDrain);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Sends the response headers set so far, once, before the first message (grpc-js sends its own empty
 * ones otherwise); later changes to them are not sent.
 */
function sendHeaders(call: { sendMetadata(metadata: grpc.Metadata): void }, context: GrpcCallContext): void {
  const metadata = toMetadata(context.takeHeaders());
  if (metadata) call.sendMetadata(metadata);
}

function trailerMetadata(context: GrpcCallContext): grpc.Metadata | undefined {
  return toMetadata(context.trailersIfAny);
}

/** grpc-js metadata of these headers; undefined when there are none. */
function toMetadata(headers: Headers | undefined): grpc.Metadata | undefined {
  let metadata: grpc.Metadata | undefined;
  headers?.forEach((value, key) => {
    metadata ??= new grpc.Metadata();
    metadata.set(key, value);
  });
  return metadata;
}

/** ConnectError codes are numerically the gRPC status codes. */
function toServiceError(error: unknown, context: GrpcCallContext): grpc.ServiceError {
  const connectError = toRpcError(error);
  const metadata = trailerMetadata(context) ?? new grpc.Metadata();
  const details = grpcStatusDetails(connectError);
  if (details) metadata.set("grpc-status-details-bin", Buffer.from(details));
  return Object.assign(new Error(connectError.rawMessage), {
    code: connectError.code as number as grpc.status,
    details: connectError.rawMessage,
    metadata,
  });
}

/**
 * Why a `grpc-timeout` header is malformed, or undefined when it is absent or well-formed: 1 to 8
 * digits and a unit (gRPC over HTTP/2 spec). The request is at fault, so INVALID_ARGUMENT, as the
 * Connect implementations (connect-go, connect-es for gRPC-Web) answer; grpc-go and grpc-js say
 * INTERNAL, which would blame the server for the client's header.
 */
export function grpcTimeoutProblem(value: string | string[] | undefined): ConnectError | undefined {
  if (value === undefined || (typeof value === "string" && GRPC_TIMEOUT.test(value))) return undefined;
  return malformedTimeout("grpc-timeout", typeof value === "string" ? value : value.join(", "));
}

const GRPC_TIMEOUT = /^\d{1,8}[HMSmun]$/;

/** Ends a native gRPC stream before grpc-js sees it, with a trailers-only error status. */
export function respondWithGrpcError(stream: http2.ServerHttp2Stream, error: unknown): void {
  const status = toRpcError(error);
  stream.on("error", () => stream.destroy());
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc+proto",
      "grpc-status": String(status.code),
      "grpc-message": encodeURIComponent(status.rawMessage),
    },
    { endStream: true },
  );
}
