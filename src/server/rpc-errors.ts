import type { DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type ErrorCode, quoteInput, WayfindError } from "../errors.ts";

/**
 * The one mapping from anything thrown while serving a call to the status the caller sees, used by
 * every transport (native gRPC through grpc-js; Connect, gRPC-Web and Connect GET through
 * connect-node), for errors of handlers and for requests rejected before a handler runs.
 *
 * Messages say what to fix and never carry a JS class name, a stack or SQL: unexpected errors are
 * answered with a fixed text (the call log has the details). Every message is bounded, because on
 * native gRPC it travels in an HTTP/2 trailer that peers cap at a few KB (grpc-c++: 8 KiB of
 * metadata); an oversized one turns the answer into a stream error the client sees as INTERNAL.
 */
export function toRpcError(error: unknown): ConnectError {
  if (error instanceof WayfindError) {
    const message =
      error.details.length > 0 ? `${error.message}\n- ${error.details.join("\n- ")}` : error.message;
    return new ConnectError(bounded(message), CODES[error.code]);
  }
  if (error instanceof ConnectError) {
    const message = bounded(error.rawMessage);
    return message === error.rawMessage ? error : new ConnectError(message, error.code, error.metadata);
  }
  // An aborted call (the client went away, the server is draining) is not a server fault.
  if (error instanceof Error && error.name === "AbortError")
    return new ConnectError("call aborted", Code.Canceled);
  return new ConnectError(UNEXPECTED, Code.Internal);
}

/** A request whose bytes (or JSON) do not decode as the method's input message. */
export function malformedRequest(input: DescMessage, reason: string): ConnectError {
  return new ConnectError(
    bounded(`request is not a valid ${input.typeName}: ${reason}`),
    Code.InvalidArgument,
  );
}

/** A timeout header that is not one (gRPC: 1-8 digits and a unit; Connect: 1-10 digits of ms). */
export function malformedTimeout(header: "grpc-timeout" | "connect-timeout-ms", value: string): ConnectError {
  const form =
    header === "grpc-timeout"
      ? 'send 1-8 digits and a unit (H, M, S, m, u, n), e.g. "500m"'
      : "send 1-10 digits of milliseconds";
  return new ConnectError(`${header} ${quoteInput(value)} is not a timeout; ${form}`, Code.InvalidArgument);
}

/** What went wrong, without the error's class name ("RangeError: …") or stack. */
export function errorReason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The most UTF-8 bytes of an error message (before the gRPC percent-encoding). */
export const MAX_ERROR_MESSAGE_BYTES = 2048;

const UNEXPECTED = "internal error; the server log has the details";
const CUT_SUFFIX_BYTES = 64;
const utf8 = new TextEncoder();
const scratch = new Uint8Array(MAX_ERROR_MESSAGE_BYTES - CUT_SUFFIX_BYTES);

function bounded(message: string): string {
  // A UTF-16 unit never takes more than 3 UTF-8 bytes: most messages need no encoding at all.
  if (message.length * 3 <= MAX_ERROR_MESSAGE_BYTES) return message;
  const { read } = utf8.encodeInto(message, scratch);
  if (read >= message.length) return message;
  return `${message.slice(0, read)}… (message cut; ${message.length} characters in all)`;
}

const CODES: Record<ErrorCode, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  permission_denied: Code.PermissionDenied,
  failed_precondition: Code.FailedPrecondition,
  resource_exhausted: Code.ResourceExhausted,
  unimplemented: Code.Unimplemented,
  unavailable: Code.Unavailable,
  internal: Code.Internal,
};
