import type { SlabScan, VectorSlab } from "./vector-slab.ts";

/** A doc and its exact cosine with the request. */
export interface NearDoc {
  readonly doc: number;
  readonly cosine: number;
}

/** The docs a search may return that have a vector, and their slots, side by side in doc order. */
export interface Eligible {
  readonly docs: Int32Array;
  readonly slots: Int32Array;
}

/** The docs whose `slotOf` is a slot and whose `allowed` byte is 1 (all, without a mask). */
export function eligibleOf(slotOf: Int32Array, allowed: Uint8Array | undefined): Eligible {
  let count = 0;
  for (let doc = 0; doc < slotOf.length; doc++)
    if ((slotOf[doc] as number) >= 0 && (allowed === undefined || allowed[doc] === 1)) count++;
  const docs = new Int32Array(count);
  const slots = new Int32Array(count);
  let at = 0;
  for (let doc = 0; doc < slotOf.length; doc++) {
    const slot = slotOf[doc] as number;
    if (slot < 0 || (allowed !== undefined && allowed[doc] !== 1)) continue;
    docs[at] = doc;
    slots[at++] = slot;
  }
  return { docs, slots };
}

/**
 * The `k` eligible docs nearest in meaning to `queries`, by exact cosine (ties: the lower doc first).
 * The scan's approximations choose what to score exactly: if A is the k-th best approximation, every
 * doc of the exact top k has an approximation of at least A − 2·bound (k docs are exactly within bound
 * of A or above, and a doc is never further than bound from its approximation), so exactly scoring
 * those few gives the same answer as scoring every doc — whatever other docs the slab holds. One pass:
 * while it goes, the k-th best so far only rises, so a doc kept then may be dropped at the end, never
 * the other way round.
 */
export function nearest(
  slab: VectorSlab,
  scan: SlabScan,
  queries: readonly Float32Array[],
  { docs, slots }: Eligible,
  k: number,
): NearDoc[] {
  if (k <= 0 || docs.length === 0) return [];
  const { approximate, bound } = scan;
  const heap = new Float64Array(k);
  let size = 0;
  const kept: number[] = [];
  for (let i = 0; i < slots.length; i++) {
    const value = approximate[slots[i] as number] as number;
    if (size < k) {
      heap[size] = value;
      siftUp(heap, size++);
    } else if (value > (heap[0] as number)) {
      heap[0] = value;
      siftDown(heap, size);
    } else if (value < (heap[0] as number) - 2 * bound) continue;
    kept.push(i);
  }
  const floor = (heap[0] as number) - 2 * bound;
  const near: NearDoc[] = [];
  for (const i of kept) {
    const slot = slots[i] as number;
    if ((approximate[slot] as number) >= floor)
      near.push({ doc: docs[i] as number, cosine: slab.exact(slot, queries) });
  }
  near.sort((a, b) => b.cosine - a.cosine || a.doc - b.doc);
  return near.slice(0, k);
}

function siftUp(heap: Float64Array, at: number): void {
  let i = at;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if ((heap[i] as number) >= (heap[parent] as number)) return;
    swap(heap, i, parent);
    i = parent;
  }
}

function siftDown(heap: Float64Array, size: number): void {
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let least = i;
    if (left < size && (heap[left] as number) < (heap[least] as number)) least = left;
    if (right < size && (heap[right] as number) < (heap[least] as number)) least = right;
    if (least === i) return;
    swap(heap, i, least);
    i = least;
  }
}

function swap(heap: Float64Array, i: number, j: number): void {
  const x = heap[i] as number;
  heap[i] = heap[j] as number;
  heap[j] = x;
}
