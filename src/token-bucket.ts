/**
 * A token bucket, the one rate limiter of src/: it holds at most `burst` tokens, refilled continuously
 * at `ratePerSecond`, and each admitted event takes one. It starts full. Clocks are the caller's, in
 * ms (any origin, as long as one bucket always reads the same clock).
 */
export class TokenBucket {
  private tokens: number;
  private refilledAtMs: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.refilledAtMs = nowMs;
  }

  /** Takes one token if the bucket holds one at `nowMs`; false, taking nothing, when it does not. */
  take(nowMs: number): boolean {
    this.tokens = Math.min(
      this.burst,
      this.tokens + ((nowMs - this.refilledAtMs) / 1000) * this.ratePerSecond,
    );
    this.refilledAtMs = nowMs;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** After a refused take: how long until the bucket holds a token, in ms. */
  waitMs(): number {
    return ((1 - this.tokens) / this.ratePerSecond) * 1000;
  }

  /** Whether the bucket is full again at `nowMs`: then it behaves as a new one, and may be forgotten. */
  fullAt(nowMs: number): boolean {
    return this.tokens + ((nowMs - this.refilledAtMs) / 1000) * this.ratePerSecond >= this.burst;
  }
}
