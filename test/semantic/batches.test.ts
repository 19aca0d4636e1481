import { describe, expect, it } from "vitest";
import { BatchQueue, type Unit } from "../../src/semantic/batches.ts";

/** A text of `tokens` word pieces (the ids do not matter to the queue, only their count). */
const text = (tokens: number) => ({ ids: Array.from({ length: tokens }, () => 7) });

const padded = (longest: number) => {
  let length = 16;
  while (length < longest) length *= 2;
  return Math.min(length, 128);
};

function queue(batchable = true): BatchQueue {
  return new BatchQueue({ dims: 2, batchable, paddedLength: padded });
}

/** Which rows of which requests a unit holds: "request:row". */
const rowsOf = (unit: Unit | undefined) =>
  unit?.rows.map(({ request, row }) => `${request.requestId}:${row}`);

describe("BatchQueue", () => {
  it("takes every waiting query before any tool text, queries of different requests together", () => {
    const q = queue();
    q.add(1, [text(10), text(12)], false);
    q.add(2, [text(8)], true);
    q.add(3, [text(20)], true);
    const first = q.next();
    expect(rowsOf(first)).toEqual(["2:0", "3:0"]);
    expect(first?.length).toBe(32);
    expect(rowsOf(q.next())).toEqual(["1:0", "1:1"]);
    expect(q.next()).toBeUndefined();
  });

  it("takes queries a search still waits for before those whose search stopped waiting", () => {
    const q = queue();
    q.add(1, [text(10)], true, 1_000);
    q.add(2, [text(10)], true, 5_000);
    q.add(3, [text(10)], false);
    expect(rowsOf(q.next(2_000))).toEqual(["2:0"]);
    // Embedded all the same, for the next time they are asked, before any background text.
    expect(rowsOf(q.next(2_000))).toEqual(["1:0"]);
    expect(rowsOf(q.next(2_000))).toEqual(["3:0"]);
  });

  it("pads each inference to one of a few lengths, and fills it up to its token budget", () => {
    const q = queue();
    // Background inferences hold 512 tokens: four texts padded to 128.
    q.add(
      1,
      Array.from({ length: 6 }, () => text(100)),
      false,
    );
    const first = q.next();
    expect(first?.length).toBe(128);
    expect(first?.rows).toHaveLength(4);
    expect(q.next()?.rows).toHaveLength(2);
  });

  it("embeds a background request's texts shortest first, so texts of a length share inferences", () => {
    const q = queue();
    q.add(1, [text(100), text(5), text(60), text(6)], false);
    expect(rowsOf(q.next())).toEqual(["1:1", "1:3", "1:2", "1:0"]);
  });

  it("runs one text per inference, unpadded, for a model whose vectors depend on their batch", () => {
    const q = queue(false);
    q.add(1, [text(10), text(30)], true);
    const first = q.next();
    expect(rowsOf(first)).toEqual(["1:0"]);
    expect(first?.length).toBe(10);
    expect(q.next()?.length).toBe(30);
  });

  it("completes a request when its last row is embedded, with each vector at its row", () => {
    const q = queue();
    const request = q.add(1, [text(10), text(3)], false);
    const unit = q.next() as Unit;
    // Shortest first: row 1, then row 0.
    const done = q.complete(unit, Float32Array.of(1, 1, 0, 0));
    expect(done).toEqual([request]);
    expect([...request.vectors]).toEqual([0, 0, 1, 1]);
  });

  it("fails a unit's requests whole, leaving nothing of them to embed", () => {
    const q = queue();
    q.add(
      1,
      Array.from({ length: 6 }, () => text(100)),
      false,
    );
    const failed = q.fail(q.next() as Unit);
    expect(failed.map((r) => r.requestId)).toEqual([1]);
    expect(q.next()).toBeUndefined();
  });
});
