import type * as http from "node:http";
import type * as http2 from "node:http2";
import type { DescMethod, Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createConnectRouter,
  createContextKey,
  createContextValues,
} from "@connectrpc/connect";
import {
  createAsyncIterable,
  encodeEnvelope,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  createEndStreamSerialization,
  endStreamFlag,
  endStreamFromJson,
  errorFromJsonBytes,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import {
  setTrailerStatus,
  trailerFlag,
  trailerParse,
  trailerSerialize,
} from "@connectrpc/connect/protocol-grpc-web";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import { writeHead } from "../../http-response.ts";
import { OFF_LOOP_DECODE_BYTES, type RequestDecoder } from "./request-decoder.ts";
import { type CallObserver, type MethodRoute, observeRoute } from "./rpc.ts";
import { malformedRequest, malformedTimeout, toRpcError, unknownEnumReason } from "./rpc-errors.ts";

export interface ConnectListenerOptions {
  readonly routes: readonly MethodRoute[];
  readonly readMaxBytes: number;
  readonly shutdownSignal: AbortSignal;
  /** Decodes large unary bodies off the event loop (shared with the native gRPC transport). */
  readonly decoder: RequestDecoder;
  /**
   * The error a request is refused with before its body is read (credentials the server refuses,
   * seen in its headers alone), or undefined: the call is answered with it in its own protocol.
   */
  readonly refusedUnread?: (
    request: NodeRequest,
  ) => ConnectError | Promise<ConnectError | undefined> | undefined;
}

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Serves the routes over Connect (binary, JSON, GET) and gRPC-Web with connect-node, as its
 * connectNodeAdapter does, with three differences:
 * - proto3 JSON is read as the spec says: an unknown field or enum name is INVALID_ARGUMENT naming
 *   it, not silently dropped (connect-es ignores both by default, so `"search_type": "NOPE"` was a
 *   default FTS search);
 * - a request connect-node rejects before any handler runs (malformed protobuf, bad base64 in a
 *   GET's `message=`, a bad timeout header) is re-answered through the one error mapping. connect
 *   answers malformed protobuf as INTERNAL and echoes caller input at any length;
 * - a large unary body (Connect binary or JSON, binary gRPC-Web; uncompressed; from
 *   OFF_LOOP_DECODE_BYTES up) is decoded in the request decoder's worker, as native gRPC bodies
 *   are: connect-node decodes on the event loop, holding it for a large body's whole decode.
 *   connect then gets an empty message and the handler the message decoded off the loop (or its
 *   decode error, in the same words as inline). Compressed and gRPC-Web-text bodies are still
 *   decoded by connect-node.
 */
export function connectRequestListener(
  options: ConnectListenerOptions,
): (request: NodeRequest, response: NodeResponse) => void {
  const router = createConnectRouter({
    acceptCompression: [compressionGzip, compressionBrotli],
    readMaxBytes: options.readMaxBytes,
    shutdownSignal: options.shutdownSignal,
    jsonOptions: { ignoreUnknownFields: false },
  });
  for (const route of options.routes) {
    const observed = observeRoute(route, handlerErrors);
    if (observed.kind === "unary") {
      const { method, impl } = observed;
      router.rpc(method, (input, context) => impl(predecodedInput(context.values) ?? input, context));
    } else router.rpc(observed.method, observed.impl);
  }
  const handlers = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));

  return (request, response) => {
    const handler = handlers.get(request.url?.split("?", 1)[0] ?? "");
    if (!handler) {
      writeHead(response, 404);
      response.end();
      return;
    }
    const values = createContextValues();
    const universal = universalRequestFromNodeRequest(request, response, undefined, values);
    const format =
      handler.method.methodKind === "unary" ? unaryBodyFormat(request, options.readMaxBytes) : undefined;
    // A refusal may wait for a replica's fence (an API key its copy may not hold yet); the body waits unread.
    Promise.resolve(options.refusedUnread?.(request))
      .then((refused) =>
        refused
          ? { ...universal, body: failingBody(refused) }
          : format
            ? decodedOffLoop(universal, format, handler.method, options.decoder, options.readMaxBytes)
            : universal,
      )
      .then(handler)
      .then((answer) => (handlerStarted(values) ? answer : reanswered(answer, handler.method)))
      .then((answer) => universalResponseToNodeResponse(answer, response))
      .catch(() => {
        // The client went away mid-answer; there is no one left to tell.
        response.destroy();
      });
  };
}

/** A body that fails with `error` when read: connect answers the error, and the real body stays unread. */
async function* failingBody(error: ConnectError): AsyncIterable<Uint8Array> {
  yield* [];
  throw error;
}

/** A body decoded off the loop, or why it did not decode (the handler answers that instead). */
type Predecoded = { readonly message: Message } | { readonly error: ConnectError };

const predecodedKey = createContextKey<Predecoded | undefined>(undefined, {
  description: "wayfind request body decoded off the event loop",
});

/** The input decoded off the loop for this call, if any; throws its decode error. */
function predecodedInput(values: ContextValues): Message | undefined {
  const predecoded = values.get(predecodedKey);
  if (predecoded === undefined) return undefined;
  if ("error" in predecoded) throw predecoded.error;
  return predecoded.message;
}

/** How a unary body is framed: Connect binary or JSON (the bare message), or gRPC-Web (one envelope). */
type BodyFormat = "binary" | "json" | "grpc-web";

/** A gRPC-Web envelope: 1 flag byte (0 = an uncompressed message), 4 bytes of length. */
const ENVELOPE_BYTES = 5;

/**
 * The format of a unary POST whose body may be worth decoding off the loop: Connect binary or JSON,
 * or binary gRPC-Web; not compressed (connect inflates those; they stay inline) and not declared
 * longer than the size limit (connect refuses those itself). Clients over HTTP/2 often declare no
 * length at all.
 */
function unaryBodyFormat(request: NodeRequest, readMaxBytes: number): BodyFormat | undefined {
  if (request.method !== "POST") return undefined;
  const declared = request.headers["content-length"];
  if (declared !== undefined && !(Number(declared) <= readMaxBytes + ENVELOPE_BYTES)) return undefined;
  const encoding = request.headers["content-encoding"];
  if (encoding !== undefined && encoding !== "identity") return undefined;
  const type = (request.headers["content-type"] ?? "").split(";", 1)[0]?.trim();
  if (type === "application/proto") return "binary";
  if (type === "application/json") return "json";
  if (type === "application/grpc-web" || type === "application/grpc-web+proto") return "grpc-web";
  return undefined;
}

/**
 * The message bytes of a body worth decoding off the loop (OFF_LOOP_DECODE_BYTES and more), or
 * undefined to leave the body to connect: small, or a gRPC-Web body that is not exactly one
 * uncompressed envelope (connect answers those as it does).
 */
function largeMessage(bytes: Uint8Array, format: BodyFormat): Uint8Array | undefined {
  if (format !== "grpc-web") return bytes.byteLength >= OFF_LOOP_DECODE_BYTES ? bytes : undefined;
  if (bytes.byteLength < ENVELOPE_BYTES + OFF_LOOP_DECODE_BYTES || bytes[0] !== 0) return undefined;
  const length = Buffer.from(bytes.buffer, bytes.byteOffset + 1, 4).readUInt32BE(0);
  return bytes.byteLength === ENVELOPE_BYTES + length ? bytes.subarray(ENVELOPE_BYTES) : undefined;
}

/**
 * Reads the body; a large message is decoded in the worker and connect gets the same request with an
 * empty message in the same format, the decoded message (or its error) waiting in the call's context
 * values. Any other body goes to connect as it came.
 */
async function decodedOffLoop(
  request: UniversalServerRequest,
  format: BodyFormat,
  method: DescMethod,
  decoder: RequestDecoder,
  readMaxBytes: number,
): Promise<UniversalServerRequest> {
  let predecoded: Predecoded;
  try {
    const framing = format === "grpc-web" ? ENVELOPE_BYTES : 0;
    const bytes = await allBytes(request.body as AsyncIterable<Uint8Array>, readMaxBytes + framing);
    const message = largeMessage(bytes, format);
    if (message === undefined) return { ...request, body: createAsyncIterable([bytes]) };
    predecoded = {
      message: await decoder.decode(method.input, message, format === "json" ? "json" : "binary"),
    };
  } catch (error) {
    predecoded = { error: error instanceof ConnectError ? error : toRpcError(error) };
  }
  request.contextValues?.set(predecodedKey, predecoded);
  const empty = EMPTY_BODIES[format];
  const header = new Headers(request.header);
  header.set("content-length", String(empty.byteLength));
  return { ...request, header, body: createAsyncIterable([empty]) };
}

/** An empty message in each format. */
const EMPTY_BODIES: Record<BodyFormat, Uint8Array> = {
  binary: new Uint8Array(0),
  json: new TextEncoder().encode("{}"),
  "grpc-web": new Uint8Array(ENVELOPE_BYTES),
};

/** Whether the handler of the call with these context values has started. */
function handlerStarted(values: ContextValues): boolean {
  return values.get(handlerStartedKey);
}

const handlerStartedKey = createContextKey(false, { description: "wayfind handler started" });

/**
 * Records in the call's context that the handler ran (an error answered without it is about the
 * request itself) and sends what it throws through the one mapping.
 */
const handlerErrors: CallObserver = {
  begin(_input, context) {
    context.values.set(handlerStartedKey, true);
    return { succeeded: () => {}, failed: toRpcError };
  },
};

/**
 * connect-node's own error answer, with its error put through the mapping. Without a handler,
 * nothing but the request can be at fault: INTERNAL and UNKNOWN mean it did not decode.
 */
async function reanswered(
  answer: UniversalServerResponse,
  method: DescMethod,
): Promise<UniversalServerResponse> {
  const contentType = answer.header?.get("content-type") ?? "";
  const format = contentType.startsWith("application/grpc-web")
    ? "grpc-web"
    : contentType.startsWith("application/connect+")
      ? "connect-stream"
      : answer.status !== 200 && contentType.startsWith("application/json")
        ? "connect-unary"
        : undefined;
  if (format === undefined || answer.body === undefined) return answer;
  const body = await allBytes(answer.body);
  const remap = (error: ConnectError) => {
    if (error.code === Code.Internal || error.code === Code.Unknown)
      return malformedRequest(method.input, decodeReason(error.rawMessage));
    const timeout = /^protocol error: invalid (grpc|connect) timeout value: (.*)$/s.exec(error.rawMessage);
    if (timeout)
      return malformedTimeout(
        timeout[1] === "grpc" ? "grpc-timeout" : "connect-timeout-ms",
        timeout[2] ?? "",
      );
    const unknownEnum = unknownEnumReason(method.input, error.rawMessage);
    return unknownEnum ? malformedRequest(method.input, unknownEnum) : toRpcError(error);
  };

  if (format === "connect-unary") {
    const error = remap(errorFromJsonBytes(body, undefined, UNREADABLE));
    const bytes = errorToJsonBytes(error, undefined);
    answer.header?.set("content-length", String(bytes.byteLength));
    return { ...answer, status: codeToHttpStatus(error.code), body: createAsyncIterable([bytes]) };
  }
  // The streaming formats: with no handler, the body is the one closing envelope (never compressed
  // by connect below 1 KiB; a bigger one is replaced unread, it can only hold connect's error).
  const compressed = (body[0] ?? 0) & 0x01;
  const envelope = body.subarray(5);
  if (format === "grpc-web") {
    const trailer = compressed ? new Headers() : trailerParse(envelope);
    setTrailerStatus(trailer, remap(findTrailerError(trailer) ?? UNREADABLE));
    return { ...answer, body: createAsyncIterable([encodeEnvelope(trailerFlag, trailerSerialize(trailer))]) };
  }
  const end = compressed ? { metadata: new Headers(), error: UNREADABLE } : endStreamFromJson(envelope);
  const serialized = createEndStreamSerialization(undefined).serialize({
    metadata: end.metadata,
    error: remap(end.error ?? UNREADABLE),
  });
  return { ...answer, body: createAsyncIterable([encodeEnvelope(endStreamFlag, serialized)]) };
}

/** Stands for an error answer that could not be read back; remapped like any decode failure. */
const UNREADABLE = new ConnectError("internal error", Code.Internal);

/** connect's wording of a decode failure, without its own prefix; its "internal error" says nothing. */
function decodeReason(message: string): string {
  if (message === "internal error")
    return "it could not be decoded (for GET: base64url, then protobuf or JSON)";
  return message.replace(/^parse (binary|json): /, "");
}

/** The whole body; past `maxBytes` (a body longer than it declared) RESOURCE_EXHAUSTED, as connect says it. */
async function allBytes(
  body: AsyncIterable<Uint8Array>,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += chunk.byteLength;
    if (length > maxBytes)
      throw new ConnectError(`message size is bigger than ${maxBytes} bytes`, Code.ResourceExhausted);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
