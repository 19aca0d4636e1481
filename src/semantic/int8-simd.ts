/**
 * Integer dot products of int8 vectors with int16 queries in WebAssembly SIMD: eight dimensions per
 * `i32x4.dot_i16x8_s`, a row's bytes sign-extended as they are loaded. A quarter of the bytes of
 * float32 rows, and half the instructions. The module is a few hundred bytes, written out here rather
 * than built, so there is no toolchain and nothing to download.
 *
 * `bestDots(rows, queries, queryCount, scales, out, count, dims)` (byte addresses in the instance's
 * memory): for each of `count` rows of `dims` int8 codes (dims a multiple of 16) from `rows`, the
 * largest integer dot product with any of `queryCount` int16 queries laid out one after another at
 * `queries`, as f32, times the row's f32 scale at `scales`, stored at `out`, 4 bytes apart.
 * Integer sums are exact, so a row's result never depends on the other rows or on the order of work.
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
  i32Const: (n: number) => [0x41, ...signedLeb(n)],
  i32Add: [0x6a],
  i32Mul: [0x6c],
  i32Shl: [0x74],
  i32LtU: [0x49],
  i32GtS: [0x4a],
  select: [0x1b],
  f32Mul: [0x94],
  f32FromI32: [0xb2],
  f32Load: [0x2a, 0x02, 0x00],
  f32Store: [0x38, 0x02, 0x00],
  v128Load: [0xfd, 0x00, 0x04, 0x00],
  /** Eight int8 lanes sign-extended to eight int16 lanes. */
  load8x8: [0xfd, 0x01, 0x03, 0x00],
  v128Zero: [0xfd, 0x0c, ...new Array<number>(16).fill(0)],
  dotI16: [0xfd, 0xba, 0x01],
  i32x4Add: [0xfd, 0xae, 0x01],
  lane: (i: number) => [0xfd, 0x1b, i],
} as const;

// Parameters 0–6: rows, queries, queryCount, scales, out, count, dims; i32 locals 7: end of rows,
// 8: offset in the row, 9: query index, 10: the query's address, 11: best, 12: sum; v128 locals
// 13, 14: two accumulators (sixteen dimensions per step, for instruction-level parallelism).
const [ROWS, QUERIES, QUERY_COUNT, SCALES, OUT, COUNT, DIMS] = [0, 1, 2, 3, 4, 5, 6];
const [END, AT, Q, QUERY_AT, BEST, SUM, ACC, ACC2] = [7, 8, 9, 10, 11, 12, 13, 14];
/** The row's bytes at `at` + `offset`, sign-extended, dotted with the query's int16 lanes there. */
const dotAt = (offset: number) => [
  op.get(ROWS),
  op.get(AT),
  op.i32Add,
  op.i32Const(offset),
  op.i32Add,
  op.load8x8,
  op.get(QUERY_AT),
  op.get(AT),
  op.i32Const(1),
  op.i32Shl,
  op.i32Add,
  op.i32Const(2 * offset),
  op.i32Add,
  op.v128Load,
  op.dotI16,
];
// biome-ignore format: one line per step of the algorithm reads better than one opcode per line
const body = [
  [2, 6, I32, 2, V128], // local declarations: six i32, two v128
  op.get(ROWS), op.get(COUNT), op.get(DIMS), op.i32Mul, op.i32Add, op.set(END),
  op.loop, // for each row:
  op.i32Const(-2147483648), op.set(BEST), op.i32Const(0), op.set(Q), op.get(QUERIES), op.set(QUERY_AT),
  op.loop, //   for each query:
  op.v128Zero, op.set(ACC), op.v128Zero, op.set(ACC2), op.i32Const(0), op.set(AT),
  op.loop, //     for each 16 dimensions:
  op.get(ACC), ...dotAt(0), op.i32x4Add, op.set(ACC),
  op.get(ACC2), ...dotAt(8), op.i32x4Add, op.set(ACC2),
  op.get(AT), op.i32Const(16), op.i32Add, op.tee(AT), op.get(DIMS), op.i32LtU, op.brIf0,
  op.end,
  op.get(ACC), op.get(ACC2), op.i32x4Add, op.tee(ACC), op.lane(0), op.get(ACC), op.lane(1), op.i32Add,
  op.get(ACC), op.lane(2), op.i32Add, op.get(ACC), op.lane(3), op.i32Add, op.set(SUM), //     sum = the lanes added up
  op.get(SUM), op.get(BEST), op.get(SUM), op.get(BEST), op.i32GtS, op.select, op.set(BEST), //     best = max(best, sum)
  op.get(QUERY_AT), op.get(DIMS), op.i32Const(1), op.i32Shl, op.i32Add, op.set(QUERY_AT), //     next query
  op.get(Q), op.i32Const(1), op.i32Add, op.tee(Q), op.get(QUERY_COUNT), op.i32LtU, op.brIf0,
  op.end,
  op.get(OUT), op.get(BEST), op.f32FromI32, op.get(SCALES), op.f32Load, op.f32Mul, op.f32Store, //   *out = best × scale
  op.get(OUT), op.i32Const(4), op.i32Add, op.set(OUT), op.get(SCALES), op.i32Const(4), op.i32Add, op.set(SCALES),
  op.get(ROWS), op.get(DIMS), op.i32Add, op.tee(ROWS), op.get(END), op.i32LtU, op.brIf0, // next row
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

function signedLeb(n: number): number[] {
  const out: number[] = [];
  let rest = n;
  for (;;) {
    const byte = rest & 0x7f;
    rest >>= 7;
    const done = (rest === 0 && (byte & 0x40) === 0) || (rest === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

const name = (s: string) => [s.length, ...Buffer.from(s, "utf8")];

const MODULE_BYTES = Uint8Array.from([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
  ...section(1, [1, 0x60, 7, I32, I32, I32, I32, I32, I32, I32, 0]),
  ...section(3, [1, 0]),
  ...section(5, [1, 0x00, 1]),
  ...section(7, [2, ...name("bestDots"), 0x00, 0, ...name("memory"), 0x02, 0]),
  ...section(10, [1, ...leb(body.length), ...body]),
]);

type BestDots = (
  rows: number,
  queries: number,
  queryCount: number,
  scales: number,
  out: number,
  count: number,
  dims: number,
) => void;
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (
    module: object,
  ) => { readonly exports: { readonly bestDots: BestDots; readonly memory: WasmMemory } };
}
/** Node has WebAssembly; the project's lib (ES2023, no DOM) does not declare it. */
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

let compiled: object | undefined;
const PAGE = 65_536;

/** One instance of the module: its memory and its function. */
export function int8Instance(): { readonly memory: WasmMemory; readonly bestDots: BestDots } {
  compiled ??= new wasm.Module(MODULE_BYTES);
  const { exports } = new wasm.Instance(compiled);
  return { memory: exports.memory, bestDots: exports.bestDots };
}

/** Grows `memory` to hold at least `bytes`; views taken before are detached when it grows. */
export function reserve(memory: WasmMemory, bytes: number): void {
  const pages = Math.ceil(bytes / PAGE) - memory.buffer.byteLength / PAGE;
  if (pages > 0) memory.grow(pages);
}

/** Whether the kernel takes rows of `dims` codes (sixteen per step). */
export function simdFits(dims: number): boolean {
  return dims > 0 && dims % 16 === 0;
}
