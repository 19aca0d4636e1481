/**
 * Domain errors. Domain modules throw these; the server maps `code` to the gRPC / Connect code of the
 * same name, so domain code never imports transport types. The message is shown to the caller: say
 * what is wrong and how to fix it, and never name something the caller may not see.
 */
export type ErrorCode =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "unauthenticated"
  | "permission_denied"
  | "failed_precondition"
  | "aborted"
  | "resource_exhausted"
  | "unimplemented"
  | "unavailable"
  | "deadline_exceeded"
  | "cancelled"
  | "internal";

/**
 * One problem of a request: where (`field`, a path such as `tools[1]` or `usage.input_tokens`, as
 * precise as the domain knows it) and what to fix. Sent as a `google.rpc.BadRequest` field violation.
 */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

/** A problem with its field, or only its text where no request field holds it (a file, a line). */
export type Problem = FieldViolation | string;

export class WayfindError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Every problem (e.g. every invalid file of a skill pack), returned as structured error details. */
    readonly details: readonly Problem[] = [],
  ) {
    super(message);
    this.name = "WayfindError";
  }
}

/** A call refused for now (a rate limit): the caller may retry after `retryAfterMs`. */
export class RetryLaterError extends WayfindError {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super("resource_exhausted", message);
  }
}

export const invalidArgument = (message: string, details?: readonly Problem[]) =>
  new WayfindError("invalid_argument", message, details);
export const notFound = (message: string) => new WayfindError("not_found", message);
export const unauthenticated = (message: string) => new WayfindError("unauthenticated", message);
export const permissionDenied = (message: string) => new WayfindError("permission_denied", message);
export const failedPrecondition = (message: string) => new WayfindError("failed_precondition", message);

/** The most characters of one caller-supplied value an error message repeats. */
const QUOTED_INPUT_MAX_CHARS = 100;

/**
 * Caller text as error messages quote it: JSON-quoted, and cut to QUOTED_INPUT_MAX_CHARS with an
 * ellipsis and the full length, so a 100 KB name never becomes a 100 KB message (on native gRPC the
 * message travels in a trailer, which HTTP/2 limits to a few KB). Deterministic: the same text
 * always quotes the same, so "hidden" and "missing" answers stay identical.
 */
export function quoteInput(text: string): string {
  if (text.length <= QUOTED_INPUT_MAX_CHARS) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, QUOTED_INPUT_MAX_CHARS))}… (${text.length} characters)`;
}

/** What went wrong, without the error's class name ("RangeError: …") or stack. */
export function errorReason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
