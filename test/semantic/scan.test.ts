import { describe, expect, it } from "vitest";
import { CosineScan } from "../../src/semantic/scan.ts";

/** Unit vectors in the plane of the first 2 of 4 dimensions, at the given angles (degrees), packed. */
function packAngles(...degrees: number[]): Float32Array {
  return Float32Array.from(
    degrees.flatMap((d) => [Math.cos((d * Math.PI) / 180), Math.sin((d * Math.PI) / 180), 0, 0]),
  );
}

const query = Float32Array.from([1, 0, 0, 0]);

function topCosine(vectors: Float32Array, q: Float32Array, k: number, candidates?: Uint8Array) {
  return new CosineScan(vectors, q.length).top(q, k, candidates);
}

describe("CosineScan.top", () => {
  it("returns the k most similar vectors, best first, with their cosine", () => {
    const hits = topCosine(packAngles(90, 10, 180, 45, 0), query, 3);
    expect(hits.map((h) => h.doc)).toEqual([4, 1, 3]);
    expect(hits[0]?.score).toBeCloseTo(1, 6);
    expect(hits[1]?.score).toBeCloseTo(Math.cos(Math.PI / 18), 6);
    expect(hits[2]?.score).toBeCloseTo(Math.SQRT1_2, 6);
  });

  it("returns every vector when k exceeds their number", () => {
    expect(topCosine(packAngles(90, 0), query, 10).map((h) => h.doc)).toEqual([1, 0]);
  });

  it("breaks ties by the lower doc, whatever the order they were seen in", () => {
    const hits = topCosine(packAngles(30, 0, 30, 0, 30), query, 4);
    expect(hits.map((h) => h.doc)).toEqual([1, 3, 0, 2]);
  });

  it("scores only the candidates the mask marks with 1", () => {
    const mask = Uint8Array.from([1, 0, 1, 0, 1]);
    const hits = topCosine(packAngles(90, 0, 180, 5, 45), query, 5, mask);
    expect(hits.map((h) => h.doc)).toEqual([4, 0, 2]);
  });

  it("returns nothing for k = 0 or an empty mask", () => {
    expect(topCosine(packAngles(0, 10), query, 0)).toEqual([]);
    expect(topCosine(packAngles(0, 10), query, 2, new Uint8Array(2))).toEqual([]);
  });

  it.each([
    [16, "four lanes at a time"],
    [6, "one float at a time, as the dimension is not a multiple of 4"],
  ])("agrees with sorting every score on random vectors of %i dimensions (%s)", (dims) => {
    const count = 500;
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648 - 0.5;
    };
    const vectors = Float32Array.from({ length: count * dims }, random);
    const q = Float32Array.from({ length: dims }, random);
    const all = Array.from({ length: count }, (_, doc) => {
      let score = 0;
      for (let d = 0; d < dims; d++) score += (vectors[doc * dims + d] as number) * (q[d] as number);
      return { doc, score };
    }).sort((a, b) => b.score - a.score || a.doc - b.doc);
    const hits = topCosine(vectors, q, 20);
    expect(hits.map((h) => h.doc)).toEqual(all.slice(0, 20).map((h) => h.doc));
    expect(hits.map((h) => h.score.toFixed(4))).toEqual(all.slice(0, 20).map((h) => h.score.toFixed(4)));
  });

  it("rejects a query whose dimension differs from the vectors'", () => {
    expect(() => new CosineScan(packAngles(0), 4).top(Float32Array.from([1, 0]), 1)).toThrow(
      "query has 2 dimensions, the vectors 4",
    );
  });
});

describe("CosineScan.bestScores", () => {
  const randomVectors = (count: number, dims: number, seed: number) => {
    let state = seed;
    const next = () => {
      state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
      return state / 2 ** 31 - 0.5;
    };
    return Float32Array.from({ length: count * dims }, next);
  };

  it("gives every vector its best cosine over several queries, as separate scans would", () => {
    for (const [dims, queryCount] of [
      [8, 1],
      [8, 3],
      [8, 8],
      [8, 11],
      [6, 3],
    ] as const) {
      const scan = new CosineScan(randomVectors(50, dims, dims * 100 + queryCount), dims);
      const queries = Array.from({ length: queryCount }, (_, i) => randomVectors(1, dims, i + 1));
      const expected = Array.from({ length: 50 }, () => Number.NEGATIVE_INFINITY);
      for (const q of queries) {
        const scores = scan.scores(q);
        for (let doc = 0; doc < 50; doc++)
          expected[doc] = Math.max(expected[doc] as number, scores[doc] as number);
      }
      const best = scan.bestScores(queries);
      for (let doc = 0; doc < 50; doc++)
        expect(best[doc], `${dims} dims, ${queryCount} queries`).toBeCloseTo(expected[doc] as number, 5);
    }
  });
});
