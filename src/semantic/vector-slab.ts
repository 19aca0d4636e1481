import { int8Instance, MAX_QUERIES, reserve, simdFits } from "./int8-simd.ts";

export { MAX_QUERIES };

/** int8 codes of a row: a row's largest |value| maps to this. */
const ROW_LEVELS = 127;
/** int16 codes of the queries: their largest |value| maps to this. */
const QUERY_LEVELS = 32_767;

/**
 * A scan's result: each slot's approximate cosine with the request (its best over the request's
 * texts), and how far any approximation may be from the exact cosine.
 */
export interface SlabScan {
  /** By slot; reused by the slab's next scan, so read it before anything else scans. */
  readonly approximate: Float32Array;
  /** |approximate − exact| ≤ bound for every slot (see VectorSlab.scan). */
  readonly bound: number;
}

/**
 * L2-normalised vectors in numbered slots: each as float32 (exact scores) and as int8 codes with a
 * scale of its own in WebAssembly memory, which a scan reads a quarter of the bytes of (int8-simd.ts).
 * Slots are reused after removal; a slot's number never changes while it holds a vector, so nothing
 * is repacked when vectors come and go.
 */
export class VectorSlab {
  private capacity = 0;
  /** Slots handed out so far (the highest used + 1); freed ones wait in `free`. */
  private used = 0;
  private readonly free: number[] = [];
  /** Each slot's vector as float32, for exact scores. */
  private floats = new Float32Array(0);
  /** The largest row scale ever given: an upper bound for the error bound's sake. */
  private largestScale = 0;
  /** The WebAssembly kernel for this dimension, or undefined where it does not fit (scanned in JS). */
  private readonly kernel: ReturnType<typeof int8Instance> | undefined;
  private layout = { queriesAt: 0, queryFloatsAt: 0, outAt: 0, scalesAt: 0, codesAt: 0, floatsAt: 0 };
  private codes = new Int8Array(0);
  private scales = new Float32Array(0);
  /**
   * The queries' codes and floats, and the scan's output: views into the kernel's memory (as are the
   * vectors' codes, scales and floats), or plain arrays where there is no kernel.
   */
  private queryCodes = new Int16Array(0);
  private queryFloats = new Float32Array(0);
  private out = new Float32Array(0);
  /** The queries whose floats are in queryFloats now (exact scores of one search reuse them). */
  private floatQueries: readonly Float32Array[] | undefined;

  constructor(readonly dims: number) {
    this.kernel = simdFits(dims) ? int8Instance(dims) : undefined;
    this.grow(64);
  }

  /** Slots in use (for sizing per-slot arrays: every slot number is below it). */
  get slots(): number {
    return this.used;
  }

  /** Puts `vector` in a free slot and returns its number. */
  add(vector: Float32Array): number {
    const slot = this.free.pop() ?? this.used++;
    // A quarter more at a time: the room left over stays small at any size.
    if (slot >= this.capacity) this.grow(Math.ceil(this.capacity * 1.25));
    this.write(slot, vector);
    return slot;
  }

  /** Replaces the vector of a slot in use. */
  replace(slot: number, vector: Float32Array): void {
    this.write(slot, vector);
  }

  /** Frees `slot`; its number may be handed out again. A scan reads it as 0 until then. */
  remove(slot: number): void {
    this.scales[slot] = 0;
    this.floats.fill(0, slot * this.dims, (slot + 1) * this.dims);
    this.free.push(slot);
  }

  /** The float32 vector of `slot` (a view: copy it to keep it past a later add). */
  vector(slot: number): Float32Array {
    return this.floats.subarray(slot * this.dims, (slot + 1) * this.dims);
  }

  /** The exact cosine of `slot` with the nearest of `queries` (float32 products, in SIMD where it fits). */
  exact(slot: number, queries: readonly Float32Array[]): number {
    const { dims, floats } = this;
    if (this.kernel) {
      if (this.floatQueries !== queries) {
        queries.forEach((query, i) => {
          this.queryFloats.set(query, i * dims);
        });
        this.floatQueries = queries;
      }
      return this.kernel.exact(queries.length)(
        this.layout.floatsAt + slot * dims * 4,
        this.layout.queryFloatsAt,
      );
    }
    const base = slot * dims;
    let best = Number.NEGATIVE_INFINITY;
    for (const query of queries) {
      let sum = 0;
      for (let d = 0; d < dims; d++) sum += (floats[base + d] as number) * (query[d] as number);
      if (sum > best) best = sum;
    }
    return best;
  }

  /**
   * Every slot's approximate cosine with the nearest of `queries` (1 to MAX_QUERIES), from the int8
   * codes and the queries as int16 codes. With v = s·c + δ (|δ| ≤ s/2 per dimension, s the row's
   * scale) and q = t·e + ε (|ε| ≤ t/2), the error Σ(s·c·ε + δ·t·e + δ·ε) is at most
   * (t/2)·‖v‖₁ + (s/2)·‖q‖₁ + dims·s·t/4, and ‖v‖₁ ≤ √dims for a unit vector: the returned bound.
   */
  scan(queries: readonly Float32Array[]): SlabScan {
    if (queries.length < 1 || queries.length > MAX_QUERIES)
      throw new Error(`a scan takes 1 to ${MAX_QUERIES} queries, not ${queries.length}`);
    const { dims } = this;
    let largest = 0;
    let largestL1 = 0;
    for (const query of queries) {
      let l1 = 0;
      for (let d = 0; d < dims; d++) {
        const x = Math.abs(query[d] as number);
        l1 += x;
        if (x > largest) largest = x;
      }
      largestL1 = Math.max(largestL1, l1);
    }
    const t = largest > 0 ? largest / QUERY_LEVELS : 1;
    const codes = this.queryCodes;
    queries.forEach((query, i) => {
      for (let d = 0; d < dims; d++) codes[i * dims + d] = Math.round((query[d] as number) / t);
    });
    const out = this.out.subarray(0, this.used);
    if (this.used > 0) {
      if (this.kernel)
        this.kernel.best(queries.length)(
          this.layout.codesAt,
          this.layout.queriesAt,
          this.layout.scalesAt,
          this.layout.outAt,
          this.used,
        );
      else this.scanInJs(codes, queries.length, out);
    }
    for (let slot = 0; slot < out.length; slot++) out[slot] = (out[slot] as number) * t;
    const s = this.largestScale;
    return {
      approximate: out,
      // A little over the algebra's figure: float32 rounding of the scaled sums.
      bound: ((t / 2) * Math.sqrt(dims) + (s / 2) * largestL1 + (dims * s * t) / 4) * 1.001 + 1e-6,
    };
  }

  private scanInJs(queries: Int16Array, queryCount: number, out: Float32Array): void {
    const { dims, codes, scales } = this;
    for (let slot = 0; slot < this.used; slot++) {
      let best = Number.NEGATIVE_INFINITY;
      for (let q = 0; q < queryCount; q++) {
        let sum = 0;
        for (let d = 0; d < dims; d++)
          sum += (codes[slot * dims + d] as number) * (queries[q * dims + d] as number);
        if (sum > best) best = sum;
      }
      // As the kernel rounds: the sum to f32, then the f32 product.
      out[slot] = Math.fround(best) * (scales[slot] as number);
    }
  }

  private write(slot: number, vector: Float32Array): void {
    if (vector.length !== this.dims)
      throw new Error(`a vector of ${vector.length} dimensions in a slab of ${this.dims}`);
    const { dims } = this;
    this.floats.set(vector, slot * dims);
    let largest = 0;
    for (let d = 0; d < dims; d++) largest = Math.max(largest, Math.abs(vector[d] as number));
    const scale = largest > 0 ? largest / ROW_LEVELS : 0;
    for (let d = 0; d < dims; d++)
      this.codes[slot * dims + d] = scale > 0 ? Math.round((vector[d] as number) / scale) : 0;
    this.scales[slot] = scale;
    this.largestScale = Math.max(this.largestScale, scale);
  }

  /** Room for `capacity` slots (rounded up to four, so every region stays 16-byte aligned). */
  private grow(wanted: number): void {
    const capacity = Math.ceil(wanted / 4) * 4;
    const { dims } = this;
    const oldFloats = this.floats.slice();
    const oldCodes = this.codes.slice();
    const oldScales = this.scales.slice();
    if (this.kernel) {
      const queriesAt = 0;
      const queryFloatsAt = queriesAt + MAX_QUERIES * dims * 2;
      const outAt = queryFloatsAt + MAX_QUERIES * dims * 4;
      const scalesAt = outAt + capacity * 4;
      const codesAt = scalesAt + capacity * 4;
      const floatsAt = codesAt + capacity * dims;
      reserve(this.kernel.memory, floatsAt + capacity * dims * 4);
      const { buffer } = this.kernel.memory;
      this.layout = { queriesAt, queryFloatsAt, outAt, scalesAt, codesAt, floatsAt };
      this.queryCodes = new Int16Array(buffer, queriesAt, MAX_QUERIES * dims);
      this.queryFloats = new Float32Array(buffer, queryFloatsAt, MAX_QUERIES * dims);
      this.out = new Float32Array(buffer, outAt, capacity);
      this.scales = new Float32Array(buffer, scalesAt, capacity);
      this.codes = new Int8Array(buffer, codesAt, capacity * dims);
      this.floats = new Float32Array(buffer, floatsAt, capacity * dims);
      // The queries' floats moved with the layout.
      this.floatQueries = undefined;
    } else {
      this.queryCodes = new Int16Array(MAX_QUERIES * dims);
      this.out = new Float32Array(capacity);
      this.scales = new Float32Array(capacity);
      this.codes = new Int8Array(capacity * dims);
      this.floats = new Float32Array(capacity * dims);
    }
    this.floats.set(oldFloats);
    this.codes.set(oldCodes);
    this.scales.set(oldScales);
    this.capacity = capacity;
  }
}
