/**
 * Scores shared by tool and skill search (docs/design.md §4): in [0, 1], comparable within one response.
 * Regex hits score by where the pattern matched; ranked hits are min-max scaled.
 */
export const REGEX_SCORE = {
  fullName: 0.95,
  namePrefix: 0.9,
  nameSubstring: 0.85,
  /** Description, trigger or tags only. */
  text: 0.75,
} as const;

/** Min-max scaling of relevance (higher = better) into [0, 1]; 0.5 each when all are equal. */
export function minMaxScale(relevance: readonly number[]): number[] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const r of relevance) {
    lo = Math.min(lo, r);
    hi = Math.max(hi, r);
  }
  const span = hi - lo;
  // Relative tolerance: BM25 sums of equal docs may differ in the last bits.
  if (span <= 1e-12 * Math.max(Math.abs(hi), 1)) return relevance.map(() => 0.5);
  return relevance.map((r) => (r - lo) / span);
}

/** The first sentence or line of a description, at most `max` characters: enough to choose, cheap to list. */
export function firstSentence(text: string, max = 160): string {
  const first = text.split(/(?<=[.!?])\s|\n/)[0] ?? "";
  return first.length <= max ? first : `${first.slice(0, max - 3)}...`;
}
