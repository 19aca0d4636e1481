/**
 * Redaction of skill text before it is returned or injected (docs/design.md §4). Patterns are deliberately
 * specific so procedural text ("send a Bearer token", "use $API_KEY") survives intact.
 *
 * Skill text is caller-supplied, so every pass is linear in the text. A plain global `replace` with
 * the URL, JWT, e-mail and key=value patterns backtracks: it retries every start inside a run of
 * matching characters, each retry rescanning the run (quadratic; cubic for key=value, whose keyword
 * may sit anywhere in the run: a short run of repeated "key-" held the event loop for seconds).
 * Those passes instead make one attempt per run (see replaceRuns). The bearer, prefixed-key and phone
 * patterns have no such retries and stay plain regexes.
 */

const BEARER = /\b(Bearer\s+)([A-Za-z0-9\-._~+/]+=*)/g;
const PREFIXED_KEYS =
  /\b(?:sk-(?:proj-|live-|test-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|(?:AKIA|ASIA)[A-Z0-9]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[A-Za-z0-9_-]{30,})/g;
const PHONE = /(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\b\d{3})[\s.-]\d{3}[\s.-]\d{4}\b|\+\d[\d\s().-]{8,}\d\b/g;

export const REDACTED_EMAIL = "[REDACTED_EMAIL]";
export const REDACTED_PHONE = "[REDACTED_PHONE]";
export const REDACTED_TOKEN = "[REDACTED_TOKEN]";

/**
 * A pattern whose matches start inside a run of `run` characters, where all starts in one run
 * succeed or fail together: they share everything after the run, and an earlier start only
 * lengthens the part inside it. So only the leftmost start of each run needs an attempt, and a failed
 * attempt skips the whole run.
 */
interface RunPattern {
  /** Global; finds the next run from `lastIndex`. */
  readonly run: RegExp;
  /** Whether the character after the run can continue a match: a cheap check skips most runs. */
  readonly continues: (next: string | undefined) => boolean;
  /** The leftmost position in [start, end) where a match may start, or -1. */
  readonly firstStart: (text: string, start: number, end: number) => number;
  /** Matches at `start` (the run ends at `runEnd`): where the match ends and what replaces it. */
  readonly attempt: (
    text: string,
    start: number,
    runEnd: number,
  ) => { end: number; replacement: string } | undefined;
}

/** What `text.replace(/…/g, …)` gives for the pattern, with one attempt per run. */
function replaceRuns(text: string, pattern: RunPattern): string {
  const run = pattern.run;
  let out = "";
  let copied = 0;
  run.lastIndex = 0;
  for (let found = run.exec(text); found; found = run.exec(text)) {
    const runEnd = found.index + found[0].length;
    if (!pattern.continues(text[runEnd])) continue;
    const start = pattern.firstStart(text, found.index, runEnd);
    const match = start < 0 ? undefined : pattern.attempt(text, start, runEnd);
    if (!match) continue; // exec resumes at runEnd
    out += text.slice(copied, start) + match.replacement;
    copied = match.end;
    run.lastIndex = match.end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

const isWordChar = (c: string | undefined): boolean =>
  c !== undefined &&
  ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c === "_");

/** `\b` at `i`. */
const atWordBoundary = (text: string, i: number): boolean => isWordChar(text[i - 1]) !== isWordChar(text[i]);

/** The first `\b` in [start, end), or -1. */
function firstBoundary(text: string, start: number, end: number): number {
  for (let i = start; i < end; i++) if (atWordBoundary(text, i)) return i;
  return -1;
}

/**
 * The first `\b` in [start, end) where `head` (sticky, starting with `literal`) matches, or -1. The
 * head is what differs between starts in a run; everything after it is shared.
 */
function firstBoundaryHead(literal: string, head: RegExp): RunPattern["firstStart"] {
  return (text, start, end) => {
    // Searched in the run alone: indexOf on the whole text would rescan past the run for every run.
    const run = text.slice(start, end);
    for (let at = run.indexOf(literal); at >= 0; at = run.indexOf(literal, at + 1)) {
      const i = start + at;
      head.lastIndex = i;
      if (atWordBoundary(text, i) && head.test(text)) return i;
    }
    return -1;
  };
}

/** A sticky regex tried at `start`, its match replaced by `replace`. */
function stickyAttempt(sticky: RegExp, replace: (match: RegExpExecArray) => string): RunPattern["attempt"] {
  return (text, start) => {
    sticky.lastIndex = start;
    const m = sticky.exec(text);
    return m ? { end: start + m[0].length, replacement: replace(m) } : undefined;
  };
}

/** `\b(https?:\/\/[^\s?#"'<>\`]+)\?[^\s#"'<>\`)\]]*` → `$1`: the URL without its query string. */
const URL_QUERY: RunPattern = {
  run: /[^\s?#"'<>`]+/g,
  continues: (next) => next === "?",
  firstStart: firstBoundaryHead("http", /https?:\/\//y),
  attempt: stickyAttempt(/(https?:\/\/[^\s?#"'<>`]+)\?[^\s#"'<>`)\]]*/y, (m) => m[1] ?? ""),
};

/** `\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}` → a token. */
const JWT: RunPattern = {
  run: /[A-Za-z0-9_-]+/g,
  continues: (next) => next === ".",
  firstStart: firstBoundaryHead("eyJ", /eyJ/y),
  attempt: stickyAttempt(/eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/y, () => REDACTED_TOKEN),
};

/** `\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b` → an e-mail placeholder. */
const EMAIL: RunPattern = {
  run: /[A-Za-z0-9._%+-]+/g,
  continues: (next) => next === "@",
  firstStart: firstBoundary,
  attempt: stickyAttempt(
    /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/y,
    () => REDACTED_EMAIL,
  ),
};

/**
 * `\b([A-Za-z0-9_-]*(?:key|token|…)[A-Za-z0-9_-]*["']?\s*[=:]\s*["']?)([A-Za-z0-9+/_\-.=]{16,})`
 * (case-insensitive): a secret-named key's long value → a token. The name is the run up to its end
 * (the run must hold a keyword); what follows the run decides alone.
 */
const SECRET_NAME = /key|token|secret|passw(?:or)?d|pwd|auth|credential|signature/i;
const ASSIGNMENT_START = /["'\s=:]/;
const ASSIGNED_VALUE = /["']?\s*[=:]\s*["']?([A-Za-z0-9+/_\-.=]{16,})/y;
const KEY_VALUE: RunPattern = {
  run: /[A-Za-z0-9_-]+/g,
  continues: (next) => next !== undefined && ASSIGNMENT_START.test(next),
  firstStart: firstBoundary,
  attempt: (text, start, runEnd) => {
    if (!SECRET_NAME.test(text.slice(start, runEnd))) return undefined;
    ASSIGNED_VALUE.lastIndex = runEnd;
    const m = ASSIGNED_VALUE.exec(text);
    if (!m) return undefined;
    const value = m[1] ?? "";
    const end = runEnd + m[0].length;
    const keep = value.includes(REDACTED_TOKEN.slice(1, -1)) || !looksSecret(value);
    return {
      end,
      replacement: keep
        ? text.slice(start, end)
        : `${text.slice(start, end - value.length)}${REDACTED_TOKEN}`,
    };
  },
};

/** A secret-looking value: long, and not a plain word or placeholder (has a digit or is very long). */
function looksSecret(value: string): boolean {
  if (value.length < 12) return false;
  return /\d/.test(value) || value.length >= 24;
}

export function redactText(text: string): string {
  if (text.length === 0) return text;
  let out = replaceRuns(text, URL_QUERY);
  out = replaceRuns(out, JWT);
  out = out.replace(BEARER, (whole, prefix: string, token: string) =>
    looksSecret(token) ? `${prefix}${REDACTED_TOKEN}` : whole,
  );
  out = out.replace(PREFIXED_KEYS, REDACTED_TOKEN);
  out = replaceRuns(out, KEY_VALUE);
  out = replaceRuns(out, EMAIL);
  return out.replace(PHONE, REDACTED_PHONE);
}
