import { invalidArgument } from "../errors.ts";

/** ListSkills page tokens: opaque to callers, the (name, seq) of the last skill of the previous page. */
export function encodePageToken(name: string, seq: number): string {
  return Buffer.from(JSON.stringify({ n: name, s: seq })).toString("base64url");
}

export function decodePageToken(token: string): { n: string; s: number } {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (
      typeof value === "object" &&
      value !== null &&
      "n" in value &&
      "s" in value &&
      typeof value.n === "string" &&
      typeof value.s === "number"
    )
      return { n: value.n, s: value.s };
  } catch {
    // fall through to the error below
  }
  throw invalidArgument("page_token is invalid: pass the next_page_token of the previous response");
}
