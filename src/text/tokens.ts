/**
 * Deterministic token estimate used for every budget in wayfind.
 *
 * ceil(chars / 4) is the documented floor; we take the larger of that and a word/punctuation count,
 * because code, JSON and identifiers tokenise into far more pieces than prose. The estimate only ever
 * errs high, so a budget computed with it is never exceeded by a real tokenizer on typical text.
 */
export function estimateTokens(text: string): number {
  if (text.length === 0) return 0;
  const byChars = Math.ceil(text.length / 4);
  const pieces = text.match(/[A-Za-z]+|[0-9]+|[^\sA-Za-z0-9]/g)?.length ?? 0;
  return Math.max(byChars, pieces);
}
