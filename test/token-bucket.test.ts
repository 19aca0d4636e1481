import { describe, expect, it } from "vitest";
import { TokenBucket } from "../src/token-bucket.ts";

/** src/token-bucket.ts: the rate limiter under auth's call limits and learning's lesson limits. */

describe("TokenBucket", () => {
  it("admits a burst at once, then refuses, saying how long until the next token", () => {
    const bucket = new TokenBucket(2, 3, 0);
    expect([bucket.take(0), bucket.take(0), bucket.take(0), bucket.take(0)]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(bucket.waitMs()).toBe(500);
  });

  it("refills at its rate, never past its burst", () => {
    const bucket = new TokenBucket(2, 3, 0);
    for (let i = 0; i < 3; i++) bucket.take(0);
    expect(bucket.take(500)).toBe(true);
    expect(bucket.take(500)).toBe(false);
    expect(bucket.fullAt(1_999)).toBe(false);
    expect(bucket.fullAt(2_000)).toBe(true);
    expect([bucket.take(60_000), bucket.take(60_000), bucket.take(60_000), bucket.take(60_000)]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });
});
