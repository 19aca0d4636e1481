import { describe, expect, it } from "vitest";
import { LruCache } from "../src/lru.ts";

/** src/lru.ts: the one least-recently-used map of src/. */

const keysOf = <V>(cache: LruCache<string, V>) => [...cache.entries()].map(([key]) => key);

describe("LruCache", () => {
  it("drops the least recently used entry past its capacity, a get counting as a use", () => {
    const cache = new LruCache<string, number>(2);
    cache.set("a", 1);
    cache.set("b", 2);
    cache.get("a");
    cache.set("c", 3);
    expect(keysOf(cache)).toEqual(["a", "c"]);
  });

  it("leaves the use order as it was on a peek", () => {
    const cache = new LruCache<string, number>(2);
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.peek("a")).toBe(1);
    cache.set("c", 3);
    expect(keysOf(cache)).toEqual(["b", "c"]);
  });

  it("keeps every entry without a capacity, walked oldest first, and may be trimmed while walked", () => {
    const cache = new LruCache<string, number>();
    for (let i = 0; i < 5; i++) cache.set(`k${i}`, i);
    cache.get("k0");
    for (const [key, value] of cache.entries()) if (value % 2 === 1) cache.delete(key);
    expect(keysOf(cache)).toEqual(["k2", "k4", "k0"]);
  });
});
