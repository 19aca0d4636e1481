/**
 * Dot products in WebAssembly SIMD. The module is written out here rather than built, so there is no
 * toolchain and nothing to download; it is made for one dimension (offsets are constants) with one
 * function per number of queries, each reading a row once for all of them.
 *
 * `best<Q>(rows, queries, scales, out, count)` (byte addresses in the instance's memory): integer dot
 * products of int8 rows with int16 queries, eight dimensions per `i32x4.dot_i16x8_s`, a row's bytes
 * sign-extended as they are loaded (a quarter of the bytes of float32 rows, half the instructions).
 * For each of `count` rows of `dims` int8 codes from `rows`, the largest integer dot product with any
 * of the Q int16 queries laid out one after another at `queries`, as f32, times the row's f32 scale at
 * `scales`, stored at `out`, 4 bytes apart. Integer sums are exact, so a row's result never depends on
 * the other rows or on the order of work.
 *
 * `exact<Q>(row, queries)`: the largest float32 dot product of the row of `dims` floats at `row` with
 * any of the Q float32 queries laid out one after another at `queries`, four lanes at a time.
 */
const I32 = 0x7f;
const F32 = 0x7d;
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
  f32Add: [0x92],
  f32Max: [0x97],
  f32x4Mul: [0xfd, 0xe6, 0x01],
  f32x4Add: [0xfd, 0xe4, 0x01],
  f32Lane: (i: number) => [0xfd, 0x1f, i],
  f32FromI32: [0xb2],
  f32Load: [0x2a, 0x02, 0x00],
  f32Store: [0x38, 0x02, 0x00],
  /** A v128 at the address on the stack plus a constant offset. */
  v128Load: (offset: number) => [0xfd, 0x00, 0x04, ...leb(offset)],
  /** Eight int8 lanes at the address plus `offset`, sign-extended to eight int16 lanes. */
  load8x8: (offset: number) => [0xfd, 0x01, 0x03, ...leb(offset)],
  v128Zero: [0xfd, 0x0c, ...new Array<number>(16).fill(0)],
  dotI16: [0xfd, 0xba, 0x01],
  i32x4Add: [0xfd, 0xae, 0x01],
  lane: (i: number) => [0xfd, 0x1b, i],
} as const;

/** The largest number of queries one pass takes (a request's intents: see requestClauses). */
export const MAX_QUERIES = 8;

// Parameters 0–4: rows, queries, scales, out, count. i32 locals 5: end of rows, 6: offset in the row,
// 7: the queries' address at that offset, 8: best, 9: sum; v128 locals 10, 11: the row's sixteen
// codes as two halves; 12…: one accumulator per query.
const [ROWS, QUERIES, SCALES, OUT, COUNT] = [0, 1, 2, 3, 4];
const [END, AT, QUERY_AT, BEST, SUM, LOW, HIGH, ACC] = [5, 6, 7, 8, 9, 10, 11, 12];

/** The body of best<queries> for rows of `dims` codes. */
function bestBody(dims: number, queries: number): number[] {
  const accumulators = Array.from({ length: queries }, (_, q) => ACC + q);
  const stride = dims * 2;
  const lanesAdded = (local: number) => [
    op.get(local),
    op.lane(0),
    op.get(local),
    op.lane(1),
    op.i32Add,
    op.get(local),
    op.lane(2),
    op.i32Add,
    op.get(local),
    op.lane(3),
    op.i32Add,
  ];
  // biome-ignore format: one line per step of the algorithm reads better than one opcode per line
  return [
    [2, 5, I32, 2 + queries, V128], // local declarations: five i32, then v128s
    op.get(ROWS), op.get(COUNT), op.i32Const(dims), op.i32Mul, op.i32Add, op.set(END),
    op.loop, // for each row:
    ...accumulators.flatMap((acc) => [op.v128Zero, op.set(acc)]),
    op.i32Const(0), op.set(AT),
    op.loop, //   for each sixteen dimensions: the row's codes once, then every query's
    op.get(ROWS), op.get(AT), op.i32Add, op.load8x8(0), op.set(LOW),
    op.get(ROWS), op.get(AT), op.i32Add, op.load8x8(8), op.set(HIGH),
    op.get(QUERIES), op.get(AT), op.i32Const(1), op.i32Shl, op.i32Add, op.set(QUERY_AT),
    ...accumulators.flatMap((acc, q) => [
      op.get(acc),
      op.get(LOW), op.get(QUERY_AT), op.v128Load(q * stride), op.dotI16, op.i32x4Add,
      op.get(HIGH), op.get(QUERY_AT), op.v128Load(q * stride + 16), op.dotI16, op.i32x4Add,
      op.set(acc),
    ]),
    op.get(AT), op.i32Const(16), op.i32Add, op.tee(AT), op.i32Const(dims), op.i32LtU, op.brIf0,
    op.end,
    ...lanesAdded(ACC), op.set(BEST), //   best = the first query's sum, then the max of the others'
    ...accumulators.slice(1).flatMap((acc) => [
      ...lanesAdded(acc), op.set(SUM),
      op.get(SUM), op.get(BEST), op.get(SUM), op.get(BEST), op.i32GtS, op.select, op.set(BEST),
    ]),
    op.get(OUT), op.get(BEST), op.f32FromI32, op.get(SCALES), op.f32Load, op.f32Mul, op.f32Store, //   *out = best × scale
    op.get(OUT), op.i32Const(4), op.i32Add, op.set(OUT), op.get(SCALES), op.i32Const(4), op.i32Add, op.set(SCALES),
    op.get(ROWS), op.i32Const(dims), op.i32Add, op.tee(ROWS), op.get(END), op.i32LtU, op.brIf0, // next row
    op.end,
    op.end,
  ].flat();
}

// Parameters 0, 1: row, queries. Locals 2: offset in the row (i32), 3: best (f32), 4: the row's
// four floats there (v128), 5…: one accumulator per query (v128).
const [ROW, QS, OFFSET, TOP, FLOATS, SUMS] = [0, 1, 2, 3, 4, 5];

/** The body of exact<queries> for rows of `dims` floats. */
function exactBody(dims: number, queries: number): number[] {
  const accumulators = Array.from({ length: queries }, (_, q) => SUMS + q);
  const lanesAdded = (local: number) => [
    op.get(local),
    op.f32Lane(0),
    op.get(local),
    op.f32Lane(1),
    op.f32Add,
    op.get(local),
    op.f32Lane(2),
    op.f32Add,
    op.get(local),
    op.f32Lane(3),
    op.f32Add,
  ];
  // biome-ignore format: one line per step of the algorithm reads better than one opcode per line
  return [
    [3, 1, I32, 1, F32, 1 + queries, V128], // local declarations: an i32, an f32, then v128s
    ...accumulators.flatMap((acc) => [op.v128Zero, op.set(acc)]),
    op.i32Const(0), op.set(OFFSET),
    op.loop, // for each four dimensions: the row's floats once, then every query's
    op.get(ROW), op.get(OFFSET), op.i32Add, op.v128Load(0), op.set(FLOATS),
    ...accumulators.flatMap((acc, q) => [
      op.get(acc), op.get(FLOATS), op.get(QS), op.get(OFFSET), op.i32Add, op.v128Load(q * dims * 4),
      op.f32x4Mul, op.f32x4Add, op.set(acc),
    ]),
    op.get(OFFSET), op.i32Const(16), op.i32Add, op.tee(OFFSET), op.i32Const(dims * 4), op.i32LtU, op.brIf0,
    op.end,
    ...lanesAdded(SUMS), op.set(TOP),
    ...accumulators.slice(1).flatMap((acc) => [op.get(TOP), ...lanesAdded(acc), op.f32Max, op.set(TOP)]),
    op.get(TOP),
    op.end,
  ].flat();
}

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

/** The module for rows of `dims` values: best1 … best8, exact1 … exact8 and the memory. */
function moduleBytes(dims: number): Uint8Array {
  const counts = Array.from({ length: MAX_QUERIES }, (_, i) => i + 1);
  const bodies = [...counts.map((q) => bestBody(dims, q)), ...counts.map((q) => exactBody(dims, q))];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    // Type 0: best (five i32, nothing back); type 1: exact (two i32, an f32 back).
    ...section(1, [2, 0x60, 5, I32, I32, I32, I32, I32, 0, 0x60, 2, I32, I32, 1, F32]),
    ...section(3, [bodies.length, ...counts.map(() => 0), ...counts.map(() => 1)]),
    ...section(5, [1, 0x00, 1]),
    ...section(7, [
      bodies.length + 1,
      ...counts.flatMap((q, i) => [...name(`best${q}`), 0x00, i]),
      ...counts.flatMap((q, i) => [...name(`exact${q}`), 0x00, counts.length + i]),
      ...name("memory"),
      0x02,
      0,
    ]),
    ...section(10, [bodies.length, ...bodies.flatMap((body) => [...leb(body.length), ...body])]),
  ]);
}

type Best = (rows: number, queries: number, scales: number, out: number, count: number) => void;
type Exact = (row: number, queries: number) => number;
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { readonly exports: Record<string, unknown> };
}
/** Node has WebAssembly; the project's lib (ES2023, no DOM) does not declare it. */
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const compiled = new Map<number, object>();
const PAGE = 65_536;

/** An instance of the module for rows of `dims` values: its memory, best(queryCount) and exact(queryCount). */
export function int8Instance(dims: number): {
  readonly memory: WasmMemory;
  readonly best: (queryCount: number) => Best;
  readonly exact: (queryCount: number) => Exact;
} {
  let module = compiled.get(dims);
  if (module === undefined) {
    module = new wasm.Module(moduleBytes(dims));
    compiled.set(dims, module);
  }
  const { exports } = new wasm.Instance(module);
  return {
    memory: exports.memory as WasmMemory,
    best: (q) => exports[`best${q}`] as Best,
    exact: (q) => exports[`exact${q}`] as Exact,
  };
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
