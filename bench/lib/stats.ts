/** The p-th percentile (0–100) of ascending `sorted` samples, nearest rank; 0 when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
