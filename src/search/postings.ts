/**
 * First index at or after `from` whose value is >= `target` in an ascending list: gallops (1, 2, 4…)
 * then binary-searches, so walking one short sorted list against a long one costs
 * O(short × log(gap)) instead of the long list's length.
 */
export function gallop(sorted: Int32Array, target: number, from: number): number {
  let step = 1;
  let hi = from;
  while (hi < sorted.length && (sorted[hi] as number) < target) {
    from = hi + 1;
    hi += step;
    step *= 2;
  }
  hi = Math.min(hi, sorted.length);
  while (from < hi) {
    const mid = (from + hi) >>> 1;
    if ((sorted[mid] as number) < target) from = mid + 1;
    else hi = mid;
  }
  return from;
}
