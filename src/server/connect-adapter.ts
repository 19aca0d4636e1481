import type * as http from "node:http";
import type * as http2 from "node:http2";
import type { DescMessage, DescMethod } from "@bufbuild/protobuf";
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
import { quoteInput } from "../errors.ts";
import { type CallObserver, type MethodRoute, observeRoute } from "./rpc.ts";
import { malformedRequest, malformedTimeout, toRpcError } from "./rpc-errors.ts";

export interface ConnectListenerOptions {
  readonly routes: readonly MethodRoute[];
  readonly readMaxBytes: number;
  readonly shutdownSignal: AbortSignal;
}

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Serves the routes over Connect (binary, JSON, GET) and gRPC-Web with connect-node, as its
 * connectNodeAdapter does, with two differences:
 * - proto3 JSON is read as the spec says: an unknown field or enum name is INVALID_ARGUMENT naming
 *   it, not silently dropped (connect-es ignores both by default, so `"search_type": "NOPE"` was a
 *   default FTS search);
 * - a request connect-node rejects before any handler runs (malformed protobuf, bad base64 in a
 *   GET's `message=`, a bad timeout header) is re-answered through the one error mapping. connect
 *   answers malformed protobuf as INTERNAL and echoes caller input at any length.
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
    const { method, impl } = observeRoute(route, handlerErrors);
    router.rpc(method, impl);
  }
  const handlers = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));

  return (request, response) => {
    const handler = handlers.get(request.url?.split("?", 1)[0] ?? "");
    if (!handler) {
      response.writeHead(404);
      response.end();
      return;
    }
    const values = createContextValues();
    handler(universalRequestFromNodeRequest(request, response, undefined, values))
      .then((answer) => (handlerStarted(values) ? answer : reanswered(answer, handler.method)))
      .then((answer) => universalResponseToNodeResponse(answer, response))
      .catch(() => {
        // The client went away mid-answer; there is no one left to tell.
        response.destroy();
      });
  };
}

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

/**
 * protobuf-es reports an unknown enum name without the field (`cannot decode enum
 * wayfind.v1.SearchType from JSON: "NOPE"`): name the field(s) of that enum and the names allowed.
 */
function unknownEnumReason(input: DescMessage, message: string): string | undefined {
  const match = /^cannot decode enum ([\w.]+) from JSON: (.*)$/s.exec(message);
  if (!match) return undefined;
  const [, enumName = "", rawValue = ""] = match;
  const fields = fieldsOfEnum(input, enumName, "", new Set());
  const enumDesc = fields[0]?.enumDesc;
  if (!enumDesc) return undefined;
  let value: unknown = rawValue;
  try {
    value = JSON.parse(rawValue);
  } catch {
    // not a JSON string or number: quote it as it came
  }
  const names = enumDesc.values.map((v) => v.name).join(", ");
  return `${fields.map((f) => f.path).join(" or ")}: ${quoteInput(String(value))} is not a value of ${enumName}; use one of ${names} (or its number)`;
}

interface EnumField {
  readonly path: string;
  readonly enumDesc: NonNullable<DescMessage["fields"][number]["enum"]>;
}

/** Paths (`filter.types`) of the fields, at any depth, whose type is the enum `typeName`. */
function fieldsOfEnum(
  message: DescMessage,
  typeName: string,
  prefix: string,
  seen: Set<string>,
): EnumField[] {
  if (seen.has(message.typeName)) return [];
  seen.add(message.typeName);
  const found: EnumField[] = [];
  for (const field of message.fields) {
    const path = `${prefix}${field.name}`;
    if (field.enum?.typeName === typeName) found.push({ path, enumDesc: field.enum });
    if (field.message) found.push(...fieldsOfEnum(field.message, typeName, `${path}.`, seen));
  }
  return found;
}

async function allBytes(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}
