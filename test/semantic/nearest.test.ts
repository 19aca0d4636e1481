import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { eligibleOf, nearest } from "../../src/semantic/nearest.ts";
import { VectorSlab } from "../../src/semantic/vector-slab.ts";

const DIMS = 32;

function normalised(values: readonly number[]): Float32Array {
  const norm = Math.hypot(...values) || 1;
  return Float32Array.from(values, (x) => x / norm);
}

/** Unit vectors, with near-duplicates and exact duplicates among them: the approximations' worst case. */
const catalog = fc
  .array(fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: DIMS, maxLength: DIMS }), {
    minLength: 1,
    maxLength: 12,
  })
  .chain((bases) =>
    fc
      .array(
        fc.tuple(
          fc.nat(bases.length - 1),
          fc.array(fc.float({ min: Math.fround(-0.02), max: Math.fround(0.02), noNaN: true }), {
            minLength: DIMS,
            maxLength: DIMS,
          }),
          fc.boolean(),
        ),
        { minLength: 1, maxLength: 200 },
      )
      .map((docs) =>
        docs.map(([base, noise, exactCopy]) =>
          normalised((bases[base] as number[]).map((x, d) => (exactCopy ? x : x + (noise[d] as number)))),
        ),
      ),
  );

/** Every eligible doc scored exactly, best first (ties: lower doc), as a full scan would. */
function exactTop(
  slab: VectorSlab,
  queries: readonly Float32Array[],
  slotOf: Int32Array,
  allowed: Uint8Array | undefined,
  k: number,
): { doc: number; cosine: number }[] {
  const all: { doc: number; cosine: number }[] = [];
  slotOf.forEach((slot, doc) => {
    if (slot >= 0 && (allowed === undefined || allowed[doc] === 1))
      all.push({ doc, cosine: slab.exact(slot, queries) });
  });
  return all.sort((a, b) => b.cosine - a.cosine || a.doc - b.doc).slice(0, k);
}

describe("nearest", () => {
  it("gives exactly what scoring every allowed doc exactly gives, whatever the approximations", () => {
    fc.assert(
      fc.property(
        catalog,
        fc.array(fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: DIMS, maxLength: DIMS }), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 200, maxLength: 200 }),
        (vectors, rawQueries, k, flags) => {
          const slab = new VectorSlab(DIMS);
          // Docs without a vector (-1) and docs the caller may not see (0) among the rest.
          const slotOf = Int32Array.from(vectors, (v, doc) => (flags[doc] === 3 ? -1 : slab.add(v)));
          const allowed = Uint8Array.from(vectors, (_, doc) => (flags[doc] === 2 ? 0 : 1));
          const queries = rawQueries.map(normalised);
          const eligible = eligibleOf(slotOf, allowed);
          expect(nearest(slab, slab.scan(queries), queries, eligible, k)).toEqual(
            exactTop(slab, queries, slotOf, allowed, k),
          );
          expect(eligible.docs.length).toBe(flags.slice(0, vectors.length).filter((f) => f < 2).length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("gives a caller the same page whatever docs it may not see the slab also holds", () => {
    fc.assert(
      fc.property(catalog, catalog, fc.integer({ min: 1, max: 20 }), (mine, others, k) => {
        const query = [mine[0] as Float32Array];
        const alone = new VectorSlab(DIMS);
        const mineOnly = Int32Array.from(mine, (v) => alone.add(v));
        const shared = new VectorSlab(DIMS);
        // The other tenant's vectors first, so they take the low slots and every approximation bound.
        for (const v of others) shared.add(v);
        const mineShared = Int32Array.from(mine, (v) => shared.add(v));
        const page = nearest(alone, alone.scan(query), query, eligibleOf(mineOnly, undefined), k);
        expect(nearest(shared, shared.scan(query), query, eligibleOf(mineShared, undefined), k)).toEqual(
          page,
        );
      }),
      { numRuns: 200 },
    );
  });

  it("finds nothing when no doc is eligible, or for k = 0", () => {
    const slab = new VectorSlab(DIMS);
    const v = normalised(Array.from({ length: DIMS }, (_, d) => d));
    const slotOf = Int32Array.of(slab.add(v), -1);
    expect(nearest(slab, slab.scan([v]), [v], eligibleOf(slotOf, Uint8Array.of(0, 1)), 5)).toEqual([]);
    expect(nearest(slab, slab.scan([v]), [v], eligibleOf(slotOf, undefined), 0)).toEqual([]);
  });
});
