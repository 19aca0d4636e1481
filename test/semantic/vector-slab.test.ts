import { describe, expect, it } from "vitest";
import { MAX_QUERIES, VectorSlab } from "../../src/semantic/vector-slab.ts";

/** Deterministic pseudo-random unit vectors. */
function unitVectors(count: number, dims: number, seed: number): Float32Array[] {
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31 - 0.5;
  };
  return Array.from({ length: count }, () => {
    const v = Float32Array.from({ length: dims }, next);
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  });
}

function cosine(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let d = 0; d < a.length; d++) sum += (a[d] as number) * (b[d] as number);
  return sum;
}

describe("VectorSlab", () => {
  it.each([
    [384, "sixteen dimensions a step in WebAssembly"],
    [20, "in JavaScript, as the dimension is not a multiple of 16"],
  ])("approximates each slot's best cosine within the bound it reports (%i dimensions: %s)", (dims) => {
    const rows = unitVectors(300, dims, dims);
    const slab = new VectorSlab(dims);
    for (const row of rows) slab.add(row);
    for (const queryCount of [1, 3, MAX_QUERIES]) {
      const queries = unitVectors(queryCount, dims, 7 + queryCount);
      const { approximate, bound } = slab.scan(queries);
      rows.forEach((row, slot) => {
        const exact = Math.max(...queries.map((q) => cosine(row, q)));
        expect(Math.abs((approximate[slot] as number) - exact)).toBeLessThanOrEqual(bound);
        expect(slab.exact(slot, queries)).toBeCloseTo(exact, 6);
      });
      // The bound is a guarantee, not a hope: it stays small for unit vectors.
      expect(bound).toBeLessThan(0.05);
    }
  });

  it("computes the same approximations in WebAssembly as in JavaScript (integer sums are exact)", () => {
    const dims = 32;
    const rows = unitVectors(50, dims, 3);
    const simd = new VectorSlab(dims);
    for (const row of rows) simd.add(row);
    // 32 dims go through WebAssembly; the same rows with 4 zeros more (36) go through JavaScript.
    const js = new VectorSlab(dims + 4);
    for (const row of rows) js.add(Float32Array.from([...row, 0, 0, 0, 0]));
    const query = unitVectors(1, dims, 9)[0] as Float32Array;
    const a = simd.scan([query]).approximate.slice();
    const b = js.scan([Float32Array.from([...query, 0, 0, 0, 0])]).approximate.slice();
    expect(a).toEqual(b);
  });

  it("keeps a slot's number while it holds a vector, and hands out freed numbers again", () => {
    const [a, b, c] = unitVectors(3, 16, 5) as [Float32Array, Float32Array, Float32Array];
    const slab = new VectorSlab(16);
    const first = slab.add(a);
    const second = slab.add(b);
    slab.remove(first);
    expect(slab.scan([a]).approximate[first]).toBe(0);
    expect(slab.add(c)).toBe(first);
    expect(slab.vector(second)).toEqual(b);
    expect(slab.vector(first)).toEqual(c);
    slab.replace(second, a);
    expect(slab.exact(second, [a])).toBeCloseTo(1, 6);
  });

  it("grows past its first room without losing a vector", () => {
    const rows = unitVectors(1_000, 16, 11);
    const slab = new VectorSlab(16);
    const slots = rows.map((row) => slab.add(row));
    const { approximate, bound } = slab.scan([rows[999] as Float32Array]);
    expect(Math.abs((approximate[slots[999] as number] as number) - 1)).toBeLessThanOrEqual(bound);
    rows.forEach((row, i) => {
      expect(slab.vector(slots[i] as number)).toEqual(row);
    });
  });

  it("refuses a vector of another dimension, and a scan of no query or too many", () => {
    const slab = new VectorSlab(16);
    expect(() => slab.add(new Float32Array(8))).toThrow("a vector of 8 dimensions in a slab of 16");
    expect(() => slab.scan([])).toThrow(`a scan takes 1 to ${MAX_QUERIES} queries, not 0`);
    expect(() => slab.scan(unitVectors(MAX_QUERIES + 1, 16, 1))).toThrow(/not 9/);
  });
});
