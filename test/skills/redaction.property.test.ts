import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { REDACTED_EMAIL, REDACTED_PHONE, REDACTED_TOKEN, redactText } from "../../src/skills/redact.ts";

/**
 * The redaction as plain global regex replaces (what it was before it was made linear): the
 * specification of what is redacted. Only ever fed short texts, where its backtracking is harmless.
 */
function referenceRedact(text: string): string {
  const looksSecret = (value: string) => value.length >= 12 && (/\d/.test(value) || value.length >= 24);
  return text
    .replace(/\b(https?:\/\/[^\s?#"'<>`]+)\?[^\s#"'<>`)\]]*/g, "$1")
    .replace(/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, REDACTED_TOKEN)
    .replace(/\b(Bearer\s+)([A-Za-z0-9\-._~+/]+=*)/g, (whole, prefix: string, token: string) =>
      looksSecret(token) ? `${prefix}${REDACTED_TOKEN}` : whole,
    )
    .replace(
      /\b(?:sk-(?:proj-|live-|test-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|(?:AKIA|ASIA)[A-Z0-9]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[A-Za-z0-9_-]{30,})/g,
      REDACTED_TOKEN,
    )
    .replace(
      /\b([A-Za-z0-9_-]*(?:key|token|secret|passw(?:or)?d|pwd|auth|credential|signature)[A-Za-z0-9_-]*["']?\s*[=:]\s*["']?)([A-Za-z0-9+/_\-.=]{16,})/gi,
      (whole, prefix: string, value: string) =>
        value.includes("REDACTED_TOKEN") || !looksSecret(value) ? whole : `${prefix}${REDACTED_TOKEN}`,
    )
    .replace(/\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/g, REDACTED_EMAIL)
    .replace(
      /(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\b\d{3})[\s.-]\d{3}[\s.-]\d{4}\b|\+\d[\d\s().-]{8,}\d\b/g,
      REDACTED_PHONE,
    );
}

/**
 * Pieces of the patterns (prefixes, separators, keyword fragments, run characters) and characters
 * that end them, including non-ASCII letters, spaces and case variants the patterns treat specially.
 */
const PIECES = [
  ..."aZ09_-.@%+=:/?#'\"`<>)]( \t\n\u00a0\u2028ſKıé😀",
  "http://",
  "https://",
  "eyJ",
  "Bearer ",
  "sk-",
  "sk-ant-",
  "proj-",
  "ghp_",
  "github_pat_",
  "AKIA",
  "xoxb-",
  "AIza",
  "key",
  "KEY",
  "Token",
  "password",
  "pwd",
  "auth",
  "secret",
  "api_key=",
  ".com",
  "ops@example.com",
  "+1 ",
  "415",
  "555-0100",
  "(415) ",
  "abcdefgh",
  "ABCDEFGH12345678",
  "0123456789",
];

/** Texts made of pieces, with runs of one repeated piece (the shape that made backtracking blow up). */
const skillText = fc
  .array(
    fc.oneof(
      fc.constantFrom(...PIECES),
      fc
        .tuple(fc.constantFrom(...PIECES), fc.integer({ min: 2, max: 12 }))
        .map(([piece, times]) => piece.repeat(times)),
    ),
    { maxLength: 24 },
  )
  .map((parts) => parts.join(""));

describe("redaction (property)", () => {
  it("redacts exactly what the plain regex replaces redact", () => {
    fc.assert(
      fc.property(skillText, (text) => {
        expect(redactText(text)).toBe(referenceRedact(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('redacts a 4,000-character field of "key-" repeated in far less than the seconds it took', () => {
    // Backtracking took 3.8 s for one such field and 14.5 s for four; linear redaction takes
    // milliseconds, so the budget is wide enough for a loaded machine.
    const fields = ["key-", "eyJ-", "http://", "a."].map((unit) =>
      unit.repeat(Math.ceil(4000 / unit.length)),
    );
    const started = performance.now();
    const redacted = fields.map(redactText);
    expect(performance.now() - started).toBeLessThan(250);
    expect(redacted).toEqual(fields);
  });
});
