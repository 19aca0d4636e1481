/**
 * What an MCP server behind wayfind writes or answers, before anyone else reads it. Its stderr may
 * hold the credentials it was started or called with (a tenant's token, printed by a debug line),
 * so it goes to wayfind's log, redacted, and never into a caller's error; where an upstream's own
 * words do reach a caller (an error it answered), the same redaction applies first.
 */
import { redactText } from "../skills/index.ts";

/** The end of a server's stderr kept, to log when it fails. */
const STDERR_TAIL = 2_000;
/** Configured values shorter than this (`1`, `true`) are not taken for secrets. */
const SHORTEST_SECRET = 6;
const REDACTED = "[redacted]";

/** Removes every known secret value, then anything shaped like one (tokens, keys, key=value). */
export class Redactor {
  private readonly secrets: readonly string[];

  /** `secrets`: the values the server was given (its environment, headers, a tenant's credentials). */
  constructor(secrets: Iterable<string>) {
    // Longest first, so a secret that contains another is removed whole.
    this.secrets = [...new Set(secrets)]
      .filter((value) => value.length >= SHORTEST_SECRET)
      .sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    let out = text;
    for (const secret of this.secrets) out = out.replaceAll(secret, REDACTED);
    return redactText(out);
  }
}

/** The last lines a server wrote to stderr, redacted on the way out. */
export class StderrTail {
  private tail = "";

  constructor(private readonly redactor: Redactor) {}

  append(text: string): void {
    this.tail = (this.tail + text).slice(-STDERR_TAIL);
  }

  clear(): void {
    this.tail = "";
  }

  /** Its last three lines, redacted; "" when it wrote nothing. */
  lastLines(): string {
    const lines = this.tail.trim().split("\n").slice(-3).join(" | ");
    return lines === "" ? "" : this.redactor.redact(lines).slice(-300);
  }
}
