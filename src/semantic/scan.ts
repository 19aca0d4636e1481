import { MAX_QUERIES, SimdDot } from "./dot-simd.ts";

export interface ScoredDoc {
  /** Position of the vector in the packed array. */
  readonly doc: number;
  /** Cosine similarity (a dot product: the vectors are L2-normalised), in [-1, 1]. */
  readonly score: number;
}

/**
 * Cosine similarity of a query to N L2-normalised vectors packed one after another (a dot product
 * each), and the top k. The vectors are copied once into WebAssembly memory and scored four floats
 * at a time (dot-simd.ts); `vectors` is that copy, so a caller can drop its own.
 */
export class CosineScan {
  readonly vectors: Float32Array;
  readonly count: number;
  private readonly simd: SimdDot | undefined;
  private readonly scalarScores: Float32Array | undefined;

  constructor(
    vectors: Float32Array,
    readonly dims: number,
  ) {
    this.count = dims > 0 ? Math.floor(vectors.length / dims) : 0;
    if (SimdDot.fits(dims)) {
      this.simd = new SimdDot(vectors.subarray(0, this.count * dims), dims);
      this.vectors = this.simd.vectors;
    } else {
      this.vectors = vectors;
      this.scalarScores = new Float32Array(this.count);
    }
  }

  /** Every vector's cosine with `query`, in doc order (reused by the next call). */
  scores(query: Float32Array): Float32Array {
    if (this.simd !== undefined) return this.simd.scores(query);
    const out = this.scalarScores ?? new Float32Array(0);
    for (let doc = 0; doc < this.count; doc++) {
      let score = 0;
      const base = doc * this.dims;
      for (let d = 0; d < this.dims; d++) score += (this.vectors[base + d] as number) * (query[d] as number);
      out[doc] = score;
    }
    return out;
  }

  /**
   * Every vector's best cosine with any of `queries` (a request read as several texts), in doc order;
   * one pass over the vectors per MAX_QUERIES queries. Reused by the next call.
   */
  bestScores(queries: readonly Float32Array[]): Float32Array {
    if (queries.length === 1) return this.scores(queries[0] as Float32Array);
    if (this.simd === undefined || queries.length > MAX_QUERIES) {
      // Rare: dimensions SIMD cannot take, or more queries than one pass holds.
      const best = new Float32Array(this.count).fill(Number.NEGATIVE_INFINITY);
      for (const query of queries) {
        const scores = this.scores(query);
        for (let doc = 0; doc < this.count; doc++)
          best[doc] = Math.max(best[doc] as number, scores[doc] as number);
      }
      return best;
    }
    return this.simd.bestScores(queries);
  }

  /**
   * The `k` docs most similar to `query`, best first (ties: lower doc first). With `candidates`, only
   * docs whose byte is 1 count. A bounded min-heap keeps the selection O(n·log k) with no per-doc allocation.
   */
  top(query: Float32Array, k: number, candidates?: Uint8Array): ScoredDoc[] {
    if (query.length !== this.dims)
      throw new Error(`query has ${query.length} dimensions, the vectors ${this.dims}`);
    return this.best(this.scores(query), k, candidates);
  }

  /** `top` over scores already computed by `scores` (a caller that needs both scans once). */
  best(scores: Float32Array, k: number, candidates?: Uint8Array): ScoredDoc[] {
    if (k <= 0 || this.count === 0) return [];
    const heapDocs = new Int32Array(k);
    const heapScores = new Float64Array(k);
    let size = 0;
    for (let doc = 0; doc < this.count; doc++) {
      if (candidates !== undefined && candidates[doc] !== 1) continue;
      const score = scores[doc] as number;
      if (size < k) {
        heapDocs[size] = doc;
        heapScores[size] = score;
        siftUp(heapDocs, heapScores, size++);
      } else if (score > (heapScores[0] as number)) {
        // Later docs lose ties, so an equal score never displaces the heap's weakest.
        heapDocs[0] = doc;
        heapScores[0] = score;
        siftDown(heapDocs, heapScores, size);
      }
    }
    const out: ScoredDoc[] = [];
    for (let i = 0; i < size; i++) out.push({ doc: heapDocs[i] as number, score: heapScores[i] as number });
    return out.sort((a, b) => b.score - a.score || a.doc - b.doc);
  }
}

/** Heap order: the weakest on top (lower score, or on a tie the later doc). */
function weaker(docs: Int32Array, scores: Float64Array, i: number, j: number): boolean {
  const a = scores[i] as number;
  const b = scores[j] as number;
  return a < b || (a === b && (docs[i] as number) > (docs[j] as number));
}

function swap(docs: Int32Array, scores: Float64Array, i: number, j: number): void {
  const doc = docs[i] as number;
  docs[i] = docs[j] as number;
  docs[j] = doc;
  const score = scores[i] as number;
  scores[i] = scores[j] as number;
  scores[j] = score;
}

function siftUp(docs: Int32Array, scores: Float64Array, at: number): void {
  let i = at;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!weaker(docs, scores, i, parent)) return;
    swap(docs, scores, i, parent);
    i = parent;
  }
}

function siftDown(docs: Int32Array, scores: Float64Array, size: number): void {
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let weakest = i;
    if (left < size && weaker(docs, scores, left, weakest)) weakest = left;
    if (right < size && weaker(docs, scores, right, weakest)) weakest = right;
    if (weakest === i) return;
    swap(docs, scores, i, weakest);
    i = weakest;
  }
}
