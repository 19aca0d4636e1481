/**
 * Redaction of skill text before it is returned or injected (DESIGN.md §4). Patterns are deliberately
 * specific so procedural text ("send a Bearer token", "use $API_KEY") survives intact.
 */

const URL_QUERY = /\b(https?:\/\/[^\s?#"'<>`]+)\?[^\s#"'<>`)\]]*/g;
const JWT = /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;
const BEARER = /\b(Bearer\s+)([A-Za-z0-9\-._~+/]+=*)/g;
const PREFIXED_KEYS =
  /\b(?:sk-(?:proj-|live-|test-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|(?:AKIA|ASIA)[A-Z0-9]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[A-Za-z0-9_-]{30,})/g;
const KEY_VALUE =
  /\b([A-Za-z0-9_-]*(?:key|token|secret|passw(?:or)?d|pwd|auth|credential|signature)[A-Za-z0-9_-]*["']?\s*[=:]\s*["']?)([A-Za-z0-9+/_\-.=]{16,})/gi;
const EMAIL = /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/g;
const PHONE = /(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\b\d{3})[\s.-]\d{3}[\s.-]\d{4}\b|\+\d[\d\s().-]{8,}\d\b/g;

export const REDACTED_EMAIL = "[REDACTED_EMAIL]";
export const REDACTED_PHONE = "[REDACTED_PHONE]";
export const REDACTED_TOKEN = "[REDACTED_TOKEN]";

/** A secret-looking value: long, and not a plain word or placeholder (has a digit or is very long). */
function looksSecret(value: string): boolean {
  if (value.length < 12) return false;
  return /\d/.test(value) || value.length >= 24;
}

export function redactText(text: string): string {
  if (text.length === 0) return text;
  return text
    .replace(URL_QUERY, "$1")
    .replace(JWT, REDACTED_TOKEN)
    .replace(BEARER, (whole, prefix: string, token: string) =>
      looksSecret(token) ? `${prefix}${REDACTED_TOKEN}` : whole,
    )
    .replace(PREFIXED_KEYS, REDACTED_TOKEN)
    .replace(KEY_VALUE, (whole, prefix: string, value: string) =>
      value.includes(REDACTED_TOKEN.slice(1, -1)) || !looksSecret(value)
        ? whole
        : `${prefix}${REDACTED_TOKEN}`,
    )
    .replace(EMAIL, REDACTED_EMAIL)
    .replace(PHONE, REDACTED_PHONE);
}
