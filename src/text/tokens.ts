/**
 * Deterministic token estimate used for every budget in wayfind.
 *
 * ceil(chars / 4) is the documented floor; we take the larger of that and a word/punctuation count,
 * because code, JSON and identifiers tokenise into far more pieces than prose. The estimate only ever
 * errs high, so a budget computed with it is never exceeded by a real tokenizer on typical text.
 */
export function estimateTokens(text: string): number {
  if (text.length === 0) return 0;
  return Math.max(Math.ceil(text.length / 4), pieces(text));
}

/** What counts as one piece: a run of ASCII letters, a run of ASCII digits, or any other non-space. */
const LETTER = 1;
const DIGIT = 2;
const OTHER = 3;

/**
 * The pieces of `/[A-Za-z]+|[0-9]+|[^\sA-Za-z0-9]/g` (UTF-16 units, as that regex reads them), counted
 * in one pass without allocating a match per piece: a long text is estimated in linear time and
 * constant memory.
 */
function pieces(text: string): number {
  let count = 0;
  let previous = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const kind =
      (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
        ? LETTER
        : c >= 48 && c <= 57
          ? DIGIT
          : isSpace(c)
            ? 0
            : OTHER;
    if (kind === OTHER || (kind !== 0 && kind !== previous)) count++;
    previous = kind;
  }
  return count;
}

/** JavaScript's `\s`: the Unicode white space and line terminators. */
function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}
