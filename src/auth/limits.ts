import type { AuthLimitsConfig } from "../config/index.ts";
import { RetryLaterError } from "../errors.ts";
import { TokenBucket } from "../token-bucket.ts";

interface Bucket {
  readonly calls: TokenBucket;
  openStreams: number;
}

/** Buckets kept before idle ones (full, no open stream) are dropped. */
const MAX_TRACKED_PRINCIPALS = 10_000;

/**
 * Per-principal limits: calls per second (a token bucket of `burst` calls refilled at the sustained
 * rate) and open watch streams. Refusals are RESOURCE_EXHAUSTED with a RetryInfo saying when.
 */
export class PrincipalLimits {
  private readonly config: AuthLimitsConfig;
  private readonly buckets = new Map<string, Bucket>();

  constructor(config: AuthLimitsConfig) {
    this.config = config;
  }

  get enabled(): boolean {
    return this.config.callsPerSecond !== undefined || this.config.watchStreams !== undefined;
  }

  /** Takes one call from the principal's bucket, or throws when it is empty. */
  admitCall(principalId: string, now = performance.now()): void {
    const rate = this.config.callsPerSecond;
    if (rate === undefined) return;
    const { calls } = this.bucket(principalId, now);
    if (calls.take(now)) return;
    const waitMs = calls.waitMs();
    throw new RetryLaterError(
      `${principalId} is over its limit of ${rate} calls per second; retry in ${Math.ceil(waitMs)} ms`,
      waitMs,
    );
  }

  /** Counts an opening watch stream; returns its release, or throws at the limit. */
  openStream(principalId: string, now = performance.now()): () => void {
    const limit = this.config.watchStreams;
    if (limit === undefined) return () => {};
    const bucket = this.bucket(principalId, now);
    if (bucket.openStreams >= limit)
      throw new RetryLaterError(
        `${principalId} already has ${limit} open watch streams, its limit; close one, or retry later`,
        1000,
      );
    bucket.openStreams += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      bucket.openStreams -= 1;
    };
  }

  private bucket(principalId: string, now: number): Bucket {
    let bucket = this.buckets.get(principalId);
    if (!bucket) {
      if (this.buckets.size >= MAX_TRACKED_PRINCIPALS) this.dropIdle(now);
      // Without a call rate only streams count: the bucket is never taken from.
      const rate = this.config.callsPerSecond ?? Number.POSITIVE_INFINITY;
      bucket = { calls: new TokenBucket(rate, this.config.burst, now), openStreams: 0 };
      this.buckets.set(principalId, bucket);
    }
    return bucket;
  }

  /** Forgets buckets that would be full again and hold no stream: they behave as new ones. */
  private dropIdle(now: number): void {
    for (const [id, bucket] of this.buckets)
      if (bucket.calls.fullAt(now) && bucket.openStreams === 0) this.buckets.delete(id);
  }
}
