import { describe, expect, it } from "vitest";
import { BatchQueue, LATER_TEXTS, type Unit } from "../../src/semantic/batches.ts";

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
  it("takes every query a search waits for before any other text, queries of different requests together", () => {
    const q = queue();
    q.add(1, [text(10), text(12)], "background");
    q.add(2, [text(8)], "later");
    q.add(3, [text(8)], "query", 5_000);
    q.add(4, [text(20)], "query", 5_000);
    const first = q.next(1_000);
    expect(rowsOf(first)).toEqual(["3:0", "4:0"]);
    expect(first?.length).toBe(32);
  });

  it("makes a query whose search stopped waiting work for the model's spare time, after those still waited for", () => {
    const q = queue();
    q.add(1, [text(10)], "query", 1_000);
    q.add(2, [text(10)], "query", 5_000);
    expect(rowsOf(q.next(2_000))).toEqual(["2:0"]);
    // Embedded all the same, for the next time it is asked.
    expect(rowsOf(q.next(2_000))).toEqual(["1:0"]);
    expect(q.next(2_000)).toBeUndefined();
  });

  it("gives the model's spare time to the latest texts no one waits for first, taking turns with catalog texts", () => {
    const q = queue();
    q.add(1, [text(100), text(100), text(100)], "background");
    q.add(2, [text(10)], "later");
    q.add(3, [text(10)], "later");
    expect(rowsOf(q.next())).toEqual(["3:0", "2:0"]);
    expect(rowsOf(q.next())).toEqual(["1:0"]);
    q.add(4, [text(10)], "later");
    expect(rowsOf(q.next())).toEqual(["4:0"]);
    expect(rowsOf(q.next())).toEqual(["1:1"]);
  });

  it("holds the texts no one waits for while searches keep coming, and goes on with them once they stop", () => {
    const q = queue();
    q.add(1, [text(10)], "later");
    q.add(2, [text(10)], "background");
    expect(rowsOf(q.next(Date.now(), "none"))).toEqual(["2:0"]);
    expect(q.next(Date.now(), "none")).toBeUndefined();
    expect(q.laterWaiting("none")).toBe(false);
    expect(rowsOf(q.next(Date.now(), "all"))).toEqual(["1:0"]);
  });

  it("while the server is busy, takes of the texts no one waits for only those asked again", () => {
    const q = queue();
    q.add(1, [text(10)], "later");
    q.add(2, [text(10)], "later");
    expect(q.laterWaiting("askedAgain")).toBe(false);
    expect(q.next(Date.now(), "askedAgain")).toBeUndefined();
    q.askedAgain(1);
    expect(q.laterWaiting("askedAgain")).toBe(true);
    expect(rowsOf(q.next(Date.now(), "askedAgain"))).toEqual(["1:0"]);
    expect(q.next(Date.now(), "askedAgain")).toBeUndefined();
    expect(rowsOf(q.next(Date.now(), "all"))).toEqual(["2:0"]);
  });

  it("takes a text no one waited for among the queries once a search waits for it", () => {
    const q = queue();
    q.add(1, [text(10)], "background");
    q.add(2, [text(10)], "later");
    q.add(3, [text(10)], "query", 5_000);
    q.hurry(2, 5_000, 1);
    expect(rowsOf(q.next(1_000))).toEqual(["2:0", "3:0"]);
  });

  it("takes the queries whose searches need the model most first, else the first come", () => {
    const q = queue();
    q.add(1, [text(10)], "query", 5_000, 0.2);
    q.add(2, [text(10)], "query", 5_000, 0.9);
    q.add(3, [text(10)], "query", 5_000, 0.2);
    q.add(4, [text(100)], "query", 5_000, 0.5);
    expect(rowsOf(q.next(1_000))).toEqual(["2:0"]);
    expect(rowsOf(q.next(1_000))).toEqual(["4:0"]);
    expect(rowsOf(q.next(1_000))).toEqual(["1:0", "3:0"]);
  });

  it("keeps a bounded number of texts no one waits for, dropping the oldest", () => {
    const q = queue();
    const first = q.add(1, [text(10)], "later");
    expect(first.dropped).toEqual([]);
    for (let id = 2; id <= LATER_TEXTS; id++) q.add(id, [text(10)], "later");
    const overflow = q.add(LATER_TEXTS + 1, [text(10)], "later");
    expect(overflow.dropped.map((r) => r.requestId)).toEqual([1]);
    expect(rowsOf(q.next())?.[0]).toBe(`${LATER_TEXTS + 1}:0`);
  });

  it("pads each inference to one of a few lengths, and fills it up to its token budget", () => {
    const q = queue();
    // An inference holds 128 tokens: one text padded to 128, or four padded to 32.
    q.add(
      1,
      Array.from({ length: 6 }, () => text(100)),
      "background",
    );
    const first = q.next();
    expect(first?.length).toBe(128);
    expect(first?.rows).toHaveLength(1);
    q.add(
      2,
      Array.from({ length: 6 }, () => text(20)),
      "query",
      5_000,
    );
    expect(q.next(1_000)?.rows).toHaveLength(4);
  });

  it("embeds a background request's texts shortest first, so texts of a length share inferences", () => {
    const q = queue();
    q.add(1, [text(100), text(5), text(60), text(6)], "background");
    expect(rowsOf(q.next())).toEqual(["1:1", "1:3"]);
    expect(rowsOf(q.next())).toEqual(["1:2"]);
    expect(rowsOf(q.next())).toEqual(["1:0"]);
  });

  it("runs one text per inference, unpadded, for a model whose vectors depend on their batch", () => {
    const q = queue(false);
    q.add(1, [text(10), text(30)], "query", 5_000);
    const first = q.next(1_000);
    expect(rowsOf(first)).toEqual(["1:0"]);
    expect(first?.length).toBe(10);
    expect(q.next(1_000)?.length).toBe(30);
  });

  it("completes a request when its last row is embedded, with each vector at its row", () => {
    const q = queue();
    const { request } = q.add(1, [text(10), text(3)], "background");
    const unit = q.next() as Unit;
    // Shortest first: row 1, then row 0.
    const done = q.complete(unit, Float32Array.of(1, 1, 0, 0));
    expect(done).toEqual([request]);
    expect([...(request.vectors ?? [])]).toEqual([0, 0, 1, 1]);
  });

  it("fails a unit's requests whole, leaving nothing of them to embed", () => {
    const q = queue();
    q.add(
      1,
      Array.from({ length: 6 }, () => text(100)),
      "background",
    );
    const failed = q.fail(q.next() as Unit);
    expect(failed.map((r) => r.requestId)).toEqual([1]);
    expect(q.next()).toBeUndefined();
  });
});
