import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { AnySchema, anyPack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, RetryInfoSchema } from "../../../gen/ts/google/rpc/error_details_pb.ts";
import { StatusSchema } from "../../../gen/ts/google/rpc/status_pb.ts";
import {
  type ErrorCode,
  type FieldViolation,
  type Problem,
  quoteInput,
  RetryLaterError,
  WayfindError,
} from "../../errors.ts";

/** An error detail to send (connect's OutgoingDetail, which it does not export). */
type OutgoingDetail = { desc: DescMessage; value: MessageInitShape<DescMessage> };

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
  if (error instanceof RetryLaterError)
    return new ConnectError(bounded(error.message), Code.ResourceExhausted, undefined, [
      retryInfo(error.retryAfterMs),
    ]);
  if (error instanceof WayfindError) {
    const details = error.details.length > 0 ? [badRequest(error.details)] : undefined;
    return new ConnectError(bounded(error.message), CODES[error.code], undefined, details);
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

/**
 * The problems of a request as a `google.rpc.BadRequest`, the detail Connect and gRPC clients decode
 * (`ConnectError.findDetails`, grpc-go `status.Details()`, Python `rpc_status.from_call`). Bounded
 * like the message, since on gRPC it travels in a trailer too (`grpc-status-details-bin`): the
 * violations that fit MAX_ERROR_DETAILS_BYTES, then one saying how many more there were.
 */
function badRequest(problems: readonly Problem[]): OutgoingDetail {
  const fieldViolations: FieldViolation[] = [];
  let bytes = 0;
  for (const [index, problem] of problems.entries()) {
    const violation = typeof problem === "string" ? { field: "", description: problem } : problem;
    const entry = {
      field: bounded(violation.field, MAX_VIOLATION_BYTES),
      description: bounded(violation.description, MAX_VIOLATION_BYTES),
    };
    // Each string's tag and length prefix, and the entry's own: at most 9 bytes in all.
    bytes += Buffer.byteLength(entry.field) + Buffer.byteLength(entry.description) + 9;
    if (bytes > MAX_ERROR_DETAILS_BYTES - CUT_SUFFIX_BYTES) {
      const more = problems.length - index;
      fieldViolations.push({ field: "", description: `… and ${more} more problem${more === 1 ? "" : "s"}` });
      break;
    }
    fieldViolations.push(entry);
  }
  return { desc: BadRequestSchema, value: { fieldViolations } };
}

/** A `google.rpc.RetryInfo`: when to try again (grpc-go `status.Details()`, Python `rpc_status`). */
function retryInfo(afterMs: number): OutgoingDetail {
  const ms = Math.max(1, Math.ceil(afterMs));
  return {
    desc: RetryInfoSchema,
    value: { retryDelay: { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 } },
  };
}

/**
 * The `grpc-status-details-bin` trailer of an error with details: a `google.rpc.Status` holding
 * them, as connect-node sends it for gRPC-Web (native gRPC is served by grpc-js, which does not).
 */
export function grpcStatusDetails(error: ConnectError): Uint8Array | undefined {
  if (error.details.length === 0) return undefined;
  const details = error.details.map((detail) =>
    "desc" in detail
      ? anyPack(detail.desc, create(detail.desc, detail.value))
      : create(AnySchema, { typeUrl: `type.googleapis.com/${detail.type}`, value: detail.value }),
  );
  return toBinary(
    StatusSchema,
    create(StatusSchema, { code: error.code, message: error.rawMessage, details }),
  );
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

/** The gRPC code of what a call threw, as logs and metrics name it ("invalid_argument", "ok" is not one). */
export function codeName(error: unknown): string {
  if (error instanceof WayfindError) return error.code;
  if (error instanceof ConnectError)
    return Code[error.code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
  return "internal";
}

/** The most UTF-8 bytes of an error message (before the gRPC percent-encoding). */
export const MAX_ERROR_MESSAGE_BYTES = 2048;
/** The most bytes of an error's encoded details; with the message, well within a trailer's 8 KiB. */
export const MAX_ERROR_DETAILS_BYTES = 2048;
/** The most UTF-8 bytes of one field or description of a violation. */
const MAX_VIOLATION_BYTES = 512;

const UNEXPECTED = "internal error; the server log has the details";
const CUT_SUFFIX_BYTES = 64;
const utf8 = new TextEncoder();
const scratch = new Uint8Array(MAX_ERROR_MESSAGE_BYTES - CUT_SUFFIX_BYTES);

/** `text` within `maxBytes` of UTF-8, cut with a note saying so. */
function bounded(text: string, maxBytes = MAX_ERROR_MESSAGE_BYTES): string {
  // A UTF-16 unit never takes more than 3 UTF-8 bytes: most texts need no encoding at all.
  if (text.length * 3 <= maxBytes) return text;
  const { read } = utf8.encodeInto(text, scratch.subarray(0, maxBytes - CUT_SUFFIX_BYTES));
  if (read >= text.length) return text;
  return `${text.slice(0, read)}… (message cut; ${text.length} characters in all)`;
}

const CODES: Record<ErrorCode, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  failed_precondition: Code.FailedPrecondition,
  aborted: Code.Aborted,
  resource_exhausted: Code.ResourceExhausted,
  unimplemented: Code.Unimplemented,
  unavailable: Code.Unavailable,
  deadline_exceeded: Code.DeadlineExceeded,
  cancelled: Code.Canceled,
  internal: Code.Internal,
};

/**
 * protobuf-es reports an unknown enum name without the field (`cannot decode enum
 * wayfind.v1.SearchType from JSON: "NOPE"`): name the field(s) of that enum and the names allowed.
 */
export function unknownEnumReason(input: DescMessage, message: string): string | undefined {
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
