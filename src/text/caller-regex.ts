import { RE2JS } from "re2js";
import { invalidArgument } from "../errors.ts";

const REGEX_LENGTH_LIMIT = 256;

/**
 * A caller's regex, compiled with RE2 semantics (linear time, case-insensitive), plus literal
 * substrings every match must contain. re2js costs microseconds per string, so a cheap
 * `includes` pre-check on lower-cased text skips most names and descriptions.
 */
export interface CallerRegex {
  readonly full: RE2JS;
  readonly prefix: RE2JS;
  /** Lower-cased; empty when the pattern offers no usable literal. */
  readonly literals: readonly string[];
  /** Lower-cased literal the text must start with (`^abc...`), or "". */
  readonly prefixLiteral: string;
  /** Set when the whole pattern is one plain literal: matched by string search, without RE2. */
  readonly literal?: LiteralPattern;
}

/**
 * `name`, `^name`, `name.*` or `^name.*` with ASCII letters, digits, `_`, `-`, space and escaped
 * punctuation: most regexes a model sends are a name fragment, and re2js allocates on every test.
 */
interface LiteralPattern {
  /** Lower-cased. */
  readonly text: string;
  readonly anchored: boolean;
  /** Ends in `.*`. */
  readonly openEnd: boolean;
}

const LITERAL_PATTERN = /^(\^)?((?:[A-Za-z0-9_\- ]|\\[.\-_/])+)(\.\*)?$/;

function literalPattern(pattern: string): LiteralPattern | undefined {
  const m = LITERAL_PATTERN.exec(pattern);
  if (!m) return undefined;
  return {
    text: (m[2] ?? "").replace(/\\(.)/g, "$1").toLowerCase(),
    anchored: m[1] !== undefined,
    openEnd: m[3] !== undefined,
  };
}

/** Whether the pattern matches somewhere in `text`; `lowered` is fold(text). */
export function matches(re: CallerRegex, text: string, lowered: string): boolean {
  const lit = re.literal;
  if (!lit) return re.full.test(text);
  return lit.anchored ? lowered.startsWith(lit.text) : lowered.includes(lit.text);
}

/** Whether the pattern matches all of `text`. */
export function matchesWhole(re: CallerRegex, text: string, lowered: string): boolean {
  const lit = re.literal;
  if (!lit) return re.full.testExact(text);
  // `.` matches anything but a newline.
  return lit.openEnd
    ? lowered.startsWith(lit.text) && lowered.indexOf("\n", lit.text.length) < 0
    : lowered === lit.text;
}

/** Whether a match starts where `text` starts. */
export function matchesAtStart(re: CallerRegex, text: string, lowered: string): boolean {
  const lit = re.literal;
  if (!lit) return re.prefix.test(text);
  return lowered.startsWith(lit.text);
}

const compileFull = (pattern: string) => RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
/** Matches only where the text starts. */
const compilePrefix = (pattern: string) => RE2JS.compile(`^(?:${pattern})`, RE2JS.CASE_INSENSITIVE);

export function compileCallerRegex(pattern: string): CallerRegex {
  if (pattern.length > REGEX_LENGTH_LIMIT)
    throw invalidArgument(`regex is ${pattern.length} characters; the limit is ${REGEX_LENGTH_LIMIT}`);
  const literals = requiredLiterals(pattern) ?? [];
  const prefixLiteral = anchoredPrefix(pattern);
  const literal = literalPattern(pattern);
  if (literal) {
    // A plain literal is always valid and matched by string search: RE2 (most of the cost of a
    // regex search, in compiling) is built only if a caller still asks for it.
    let full: RE2JS | undefined;
    let prefix: RE2JS | undefined;
    return {
      get full() {
        full ??= compileFull(pattern);
        return full;
      },
      get prefix() {
        prefix ??= compilePrefix(pattern);
        return prefix;
      },
      literals,
      prefixLiteral,
      literal,
    };
  }
  try {
    return {
      full: compileFull(pattern),
      prefix: compilePrefix(pattern),
      literals,
      prefixLiteral,
    };
  } catch (err) {
    throw invalidArgument(`invalid regex: ${(err as Error).message}`);
  }
}

/**
 * Lower-case with the few simple case folds RE2 applies that toLowerCase does not
 * (long s → s, final sigma → sigma), so the literal pre-check never rejects a real match.
 */
export function fold(text: string): string {
  return text.toLowerCase().replace(/ſ/g, "s").replace(/ς/g, "σ");
}

/** True when `lowered` (fold(text)) may match; false means it certainly cannot. */
export function mayMatch(re: CallerRegex, lowered: string): boolean {
  if (re.prefixLiteral && !lowered.startsWith(re.prefixLiteral)) return false;
  for (const lit of re.literals) if (!lowered.includes(lit)) return false;
  return true;
}

/** For `^abc…` (no alternation), the literal every match starts with: "^get_.*" → "get_". */
function anchoredPrefix(pattern: string): string {
  if (!pattern.startsWith("^") || requiredLiterals(pattern) === undefined) return "";
  let lit = "";
  for (let i = 1; i < pattern.length; ) {
    const c = pattern[i] ?? "";
    if (/[\p{L}\p{N}_\- ,:;<>=!@%'"`~&#/]/u.test(c)) {
      lit += c;
      i++;
      continue;
    }
    const next = pattern[i + 1] ?? "";
    if (c === "\\" && LITERAL_ESCAPES.has(next)) {
      lit += next;
      i += 2;
      continue;
    }
    // A quantifier that allows zero makes the character before it optional.
    if (c === "*" || c === "?" || c === "{") lit = lit.slice(0, -1);
    break;
  }
  return fold(lit);
}

const LITERAL_ESCAPES = new Set([..."\\.-_/+*?()[]{}|^$#&~ ,:;<>=!@%'\"`"]);

/**
 * Conservative "must contain" literals: runs of plain characters outside groups and classes. Any
 * alternation gives up (returns undefined); a quantifier drops the character it applies to.
 * Returns lower-cased runs of at least 2 characters.
 */
function requiredLiterals(pattern: string): string[] | undefined {
  const runs: string[] = [];
  let run = "";
  let depth = 0;
  const end = () => {
    if (depth === 0 && run.length >= 2) runs.push(fold(run));
    run = "";
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? "";
    if (c === "|") return undefined;
    if (c === "\\") {
      const next = pattern[i + 1] ?? "";
      if (next === "Q") return undefined;
      i++;
      if (LITERAL_ESCAPES.has(next)) {
        if (depth === 0) run += next;
        continue;
      }
      end(); // \d \w \b \x41 \p{..} \123: not a plain literal; skip its operand too
      if (next === "p" || next === "P" || next === "x") {
        if (pattern[i + 1] === "{") while (i < pattern.length && pattern[i] !== "}") i++;
        else i += next === "x" ? 2 : 1;
      } else if (next >= "0" && next <= "9") while (/[0-9]/.test(pattern[i + 1] ?? "")) i++;
      continue;
    }
    if (c === "*" || c === "?" || c === "{") {
      // The previous character (if it was in the run) may be absent.
      run = run.slice(0, -1);
      end();
      if (c === "{") while (i < pattern.length && pattern[i] !== "}") i++;
      continue;
    }
    if (c === "+") {
      end();
      continue;
    }
    if (c === "[") {
      end();
      i++;
      if (pattern[i] === "^") i++;
      if (pattern[i] === "]") i++;
      while (i < pattern.length && pattern[i] !== "]") {
        if (pattern[i] === "\\") i++;
        else if (pattern[i] === "[" && pattern[i + 1] === ":") {
          const close = pattern.indexOf(":]", i + 2);
          if (close >= 0) i = close + 1;
        }
        i++;
      }
      continue;
    }
    if (c === "(") {
      end();
      depth++;
      continue;
    }
    if (c === ")") {
      end();
      depth = Math.max(0, depth - 1);
      continue;
    }
    if (c === "." || c === "^" || c === "$") {
      end();
      continue;
    }
    if (depth === 0) run += c;
  }
  end();
  return runs;
}
