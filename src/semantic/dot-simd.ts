/**
 * Dot products of one query with many packed vectors, in WebAssembly SIMD (f32x4): scalar JavaScript
 * needs 3–5 ms for 10,000 × 384 floats, four lanes at a time bring it near 1 ms. The module is ~300
 * bytes, written out here rather than built, so there is no toolchain and nothing to download.
 *
 * `dot(vectors, query, out, count, rowBytes)` (byte addresses in the instance's memory): for each of
 * `count` rows of `rowBytes` bytes (a multiple of 16) from `vectors`, stores the row · query as f32 at
 * `out`, 4 bytes apart.
 * `dotMax(vectors, queries, queryCount, out, count, rowBytes)`: the same, storing each row's best dot
 * with any of `queryCount` queries laid out one after another at `queries`. One pass over the rows: at
 * 10,000 rows the scan waits on memory (a row costs twice as long as when the rows fit in cache), so
 * several queries cost little more than one.
 */
const I32 = 0x7f;
const V128 = 0x7b;
const op = {
  loop: [0x03, 0x40],
  end: [0x0b],
  brIf0: [0x0d, 0x00],
  get: (i: number) => [0x20, i],
  set: (i: number) => [0x21, i],
  tee: (i: number) => [0x22, i],
  i32Const: (n: number) => [0x41, n],
  i32Add: [0x6a],
  i32Mul: [0x6c],
  i32LtU: [0x49],
  f32Add: [0x92],
  f32Max: [0x97],
  f32Const: (x: number) => [0x43, ...new Uint8Array(Float32Array.of(x).buffer)],
  f32Store: [0x38, 0x02, 0x00],
  v128Load: [0xfd, 0x00, 0x02, 0x00],
  v128Zero: [0xfd, 0x0c, ...new Array<number>(16).fill(0)],
  f32x4Mul: [0xfd, 0xe6, 0x01],
  f32x4Add: [0xfd, 0xe4, 0x01],
  lane: (i: number) => [0xfd, 0x1f, i],
} as const;

// Parameters 0–4: vectors, query, out, count, rowBytes; locals 5: offset in the row, 6: end of vectors, 7: sum.
const [VECTORS, QUERY, OUT, COUNT, ROW_BYTES, AT, END, SUM] = [0, 1, 2, 3, 4, 5, 6, 7];
// biome-ignore format: one line per step of the algorithm reads better than one opcode per line
const body = [
  [2, 2, I32, 1, V128], // two local declarations: two i32, one v128
  op.get(VECTORS), op.get(COUNT), op.get(ROW_BYTES), op.i32Mul, op.i32Add, op.set(END), // end = vectors + count * rowBytes
  op.loop, // for each row:
  op.v128Zero, op.set(SUM), op.i32Const(0), op.set(AT), //   sum = 0, at = 0
  op.loop, //   for each 16 bytes of the row:
  op.get(SUM),
  op.get(VECTORS), op.get(AT), op.i32Add, op.v128Load,
  op.get(QUERY), op.get(AT), op.i32Add, op.v128Load,
  op.f32x4Mul, op.f32x4Add, op.set(SUM), //     sum += row[at..at+4] * query[at..at+4]
  op.get(AT), op.i32Const(16), op.i32Add, op.tee(AT), op.get(ROW_BYTES), op.i32LtU, op.brIf0,
  op.end,
  op.get(OUT), //   *out = the four lanes of sum added up
  op.get(SUM), op.lane(0), op.get(SUM), op.lane(1), op.f32Add, op.get(SUM), op.lane(2), op.f32Add,
  op.get(SUM), op.lane(3), op.f32Add, op.f32Store,
  op.get(OUT), op.i32Const(4), op.i32Add, op.set(OUT), //   out += 4
  op.get(VECTORS), op.get(ROW_BYTES), op.i32Add, op.tee(VECTORS), op.get(END), op.i32LtU, op.brIf0, // next row
  op.end,
  op.end,
].flat();

// Parameters 0–5: vectors, queries, queryCount, out, count, rowBytes; locals 6: end of vectors,
// 7: offset in the row, 8: query index, 9: the query's address, 10: sum, 11: best.
const M = { VECTORS: 0, QUERIES: 1, QUERY_COUNT: 2, OUT: 3, COUNT: 4, ROW_BYTES: 5 } as const;
const [M_END, M_AT, M_Q, M_QAT, M_SUM, M_BEST] = [6, 7, 8, 9, 10, 11];
const F32 = 0x7d;
// biome-ignore format: one line per step of the algorithm reads better than one opcode per line
const maxBody = [
  [3, 4, I32, 1, V128, 1, F32], // local declarations: four i32, one v128, one f32
  op.get(M.VECTORS), op.get(M.COUNT), op.get(M.ROW_BYTES), op.i32Mul, op.i32Add, op.set(M_END),
  op.loop, // for each row:
  op.f32Const(Number.NEGATIVE_INFINITY), op.set(M_BEST), op.i32Const(0), op.set(M_Q),
  op.get(M.QUERIES), op.set(M_QAT),
  op.loop, //   for each query:
  op.v128Zero, op.set(M_SUM), op.i32Const(0), op.set(M_AT),
  op.loop, //     for each 16 bytes of the row:
  op.get(M_SUM),
  op.get(M.VECTORS), op.get(M_AT), op.i32Add, op.v128Load,
  op.get(M_QAT), op.get(M_AT), op.i32Add, op.v128Load,
  op.f32x4Mul, op.f32x4Add, op.set(M_SUM),
  op.get(M_AT), op.i32Const(16), op.i32Add, op.tee(M_AT), op.get(M.ROW_BYTES), op.i32LtU, op.brIf0,
  op.end,
  op.get(M_BEST), //     best = max(best, the four lanes of sum added up)
  op.get(M_SUM), op.lane(0), op.get(M_SUM), op.lane(1), op.f32Add, op.get(M_SUM), op.lane(2), op.f32Add,
  op.get(M_SUM), op.lane(3), op.f32Add, op.f32Max, op.set(M_BEST),
  op.get(M_QAT), op.get(M.ROW_BYTES), op.i32Add, op.set(M_QAT), //     next query
  op.get(M_Q), op.i32Const(1), op.i32Add, op.tee(M_Q), op.get(M.QUERY_COUNT), op.i32LtU, op.brIf0,
  op.end,
  op.get(M.OUT), op.get(M_BEST), op.f32Store, //   *out = best
  op.get(M.OUT), op.i32Const(4), op.i32Add, op.set(M.OUT),
  op.get(M.VECTORS), op.get(M.ROW_BYTES), op.i32Add, op.tee(M.VECTORS), op.get(M_END), op.i32LtU, op.brIf0,
  op.end,
  op.end,
].flat();

function section(id: number, content: readonly number[]): number[] {
  return [id, ...leb(content.length), ...content];
}

function leb(n: number): number[] {
  const out: number[] = [];
  let rest = n;
  do {
    const byte = rest & 0x7f;
    rest >>>= 7;
    out.push(rest === 0 ? byte : byte | 0x80);
  } while (rest !== 0);
  return out;
}

const name = (s: string) => [s.length, ...Buffer.from(s, "utf8")];

const MODULE_BYTES = Uint8Array.from([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
  ...section(1, [2, 0x60, 5, I32, I32, I32, I32, I32, 0, 0x60, 6, I32, I32, I32, I32, I32, I32, 0]),
  ...section(3, [2, 0, 1]),
  ...section(5, [1, 0x00, 1]),
  ...section(7, [3, ...name("dot"), 0x00, 0, ...name("dotMax"), 0x00, 1, ...name("memory"), 0x02, 0]),
  ...section(10, [2, ...leb(body.length), ...body, ...leb(maxBody.length), ...maxBody]),
]);

type Dot = (vectors: number, query: number, out: number, count: number, rowBytes: number) => void;
type DotMax = (
  vectors: number,
  queries: number,
  queryCount: number,
  out: number,
  count: number,
  rowBytes: number,
) => void;
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (
    module: object,
  ) => { readonly exports: { readonly dot: Dot; readonly dotMax: DotMax; readonly memory: WasmMemory } };
}
/** Node has WebAssembly; the project's lib (ES2023, no DOM) does not declare it. */
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

let compiled: object | undefined;
const PAGE = 65_536;
/** Queries one bestScores pass takes at most (a request's intents: see requestClauses). */
export const MAX_QUERIES = 8;

/** Vectors copied once into a WebAssembly memory, scored against a query in one SIMD pass. */
export class SimdDot {
  /** The vectors, in the instance's memory. */
  readonly vectors: Float32Array;
  private readonly memory: WasmMemory;
  private readonly dot: Dot;
  private readonly dotMax: DotMax;
  private readonly queryAt: number;
  private readonly outAt: number;

  /** Needs `dims` to be a multiple of 4 (whole f32x4 lanes); see `SimdDot.fits`. */
  constructor(
    vectors: Float32Array,
    readonly dims: number,
  ) {
    compiled ??= new wasm.Module(MODULE_BYTES);
    const { exports } = new wasm.Instance(compiled);
    this.memory = exports.memory;
    this.dot = exports.dot;
    this.dotMax = exports.dotMax;
    const count = Math.floor(vectors.length / dims);
    this.queryAt = vectors.length * 4;
    this.outAt = this.queryAt + MAX_QUERIES * dims * 4;
    const bytes = this.outAt + count * 4;
    const pages = Math.ceil(bytes / PAGE) - this.memory.buffer.byteLength / PAGE;
    if (pages > 0) this.memory.grow(pages);
    // Grown once, before any view is taken: growing would detach the views.
    this.vectors = new Float32Array(this.memory.buffer, 0, vectors.length);
    this.vectors.set(vectors);
  }

  static fits(dims: number): boolean {
    return dims > 0 && dims % 4 === 0;
  }

  /** Every vector's dot product with `query`; the array is reused by the next call. */
  scores(query: Float32Array): Float32Array {
    new Float32Array(this.memory.buffer, this.queryAt, this.dims).set(query);
    const count = this.vectors.length / this.dims;
    if (count > 0) this.dot(0, this.queryAt, this.outAt, count, this.dims * 4);
    return new Float32Array(this.memory.buffer, this.outAt, count);
  }

  /**
   * Every vector's best dot product with any of `queries` (1 to MAX_QUERIES), in one pass over the
   * vectors; the array is reused by the next call.
   */
  bestScores(queries: readonly Float32Array[]): Float32Array {
    if (queries.length < 1 || queries.length > MAX_QUERIES)
      throw new Error(`bestScores takes 1 to ${MAX_QUERIES} queries, not ${queries.length}`);
    const area = new Float32Array(this.memory.buffer, this.queryAt, queries.length * this.dims);
    queries.forEach((query, i) => {
      area.set(query, i * this.dims);
    });
    const count = this.vectors.length / this.dims;
    if (count > 0) this.dotMax(0, this.queryAt, queries.length, this.outAt, count, this.dims * 4);
    return new Float32Array(this.memory.buffer, this.outAt, count);
  }
}
