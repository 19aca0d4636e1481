import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Embedder } from "../../src/semantic/embedder.ts";
import { queryVectors } from "../../src/semantic/query-wait.ts";
import { MODEL_DIR } from "./model-dir.ts";

/** A request of the model's whole length (128 word pieces): the slowest kind to embed. */
const long = (i: number) =>
  `request ${i}: ${Array.from({ length: 150 }, (_, w) => `word${(w * 7 + i) % 97}`).join(" ")}`;

describe("queryVectors (the shipped model, one inference thread)", () => {
  let embedder: Embedder;
  beforeAll(async () => {
    embedder = await Embedder.open(MODEL_DIR, { threads: 1 });
  });
  afterAll(() => embedder.close());

  it("gives the vectors of texts asked before at once, without waiting", async () => {
    await embedder.embedQuery("list my open pull requests");
    const { vectors, late, failed } = await queryVectors(embedder, ["list my open pull requests"], 0);
    expect({ count: vectors.length, late, failed }).toEqual({ count: 1, late: 0, failed: 0 });
  });

  it("does not wait in vain: when the queries ahead would take longer than the wait, it answers at once", async () => {
    await embedder.embedQuery(long(-1)); // the model's pace, learned from a query like these
    const backlog = Array.from({ length: 200 }, (_, i) => embedder.embedQuery(long(i)));
    const waitMs = 300;
    // The queries ahead would take well over the wait (each long text takes milliseconds).
    expect(embedder.expectedWaitMs()).toBeGreaterThan(2 * waitMs);
    const started = performance.now();
    const { vectors, late } = await queryVectors(embedder, ["a request nobody asked before"], waitMs);
    // Answered long before the wait would have ended: not a timer's doing.
    expect(performance.now() - started).toBeLessThan(waitMs / 2);
    expect({ count: vectors.length, late }).toEqual({ count: 0, late: 1 });
    // Embedded all the same (after the queries still waited for), for the next time.
    await Promise.all([...backlog, embedder.embedQuery("a request nobody asked before")]);
    expect(embedder.cachedQuery("a request nobody asked before")).toHaveLength(384);
  });
});
