import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Embedder } from "../../src/semantic/embedder.ts";
import { requestMeaning } from "../../src/semantic/request-meaning.ts";
import { MODEL_DIR, modelWithoutStaticTier } from "./model-dir.ts";

/** A request of the model's whole length (128 word pieces): the slowest kind to embed. */
const long = (i: number) =>
  `request ${i}: ${Array.from({ length: 150 }, (_, w) => `word${(w * 7 + i) % 97}`).join(" ")}`;

/** Resolves once the model has embedded `text` (asked before: its vector is on its way). */
const embedded = (embedder: Embedder, text: string) => embedder.embedQuery(text);

describe("requestMeaning (the shipped model and its static tier, one inference thread)", () => {
  let embedder: Embedder;
  beforeAll(async () => {
    embedder = await Embedder.open(MODEL_DIR, { threads: 1 });
  });
  afterAll(() => embedder.close());

  it("reads a request asked before by the model, at once", async () => {
    await embedder.embedQuery("list my open pull requests");
    const meaning = await requestMeaning(embedder, ["list my open pull requests"], 0);
    expect(meaning).toMatchObject({ tier: "model", late: 0, failed: 0, modelLate: 0 });
    expect(meaning.vectors).toHaveLength(1);
  });

  it("waits for the model when it is expected to embed the request within the wait", async () => {
    const meaning = await requestMeaning(embedder, ["archive the finished projects of last year"], 5_000);
    expect(meaning).toMatchObject({ tier: "model", modelLate: 0 });
    expect(meaning.vectors[0]).toEqual(embedder.cachedQuery("archive the finished projects of last year"));
  });

  it("reads a request by the static tier at once when the queries ahead would outlast the wait, and by the model next time", async () => {
    const backlog = Array.from({ length: 100 }, (_, i) => embedder.embedQuery(long(i)));
    const waitMs = 300;
    const text = "which umbrella shop is open near the station";
    expect(embedder.expectedWaitMs([text])).toBeGreaterThan(2 * waitMs);
    const started = performance.now();
    const meaning = await requestMeaning(embedder, [text], waitMs);
    // Answered long before the wait would have ended: not a timer's doing.
    expect(performance.now() - started).toBeLessThan(waitMs / 2);
    expect(meaning).toMatchObject({ tier: "static", late: 0, modelLate: 1 });
    expect(meaning.vectors[0]).toEqual(embedder.staticTier?.embed(text));
    // The model embeds it when it has time (after the queries searches wait for): read by the model next time.
    await Promise.all(backlog);
    await embedded(embedder, text);
    expect(await requestMeaning(embedder, [text], 0)).toMatchObject({ tier: "model", modelLate: 0 });
  });

  it("gives the model first to requests whose words say least, while other searches wait for it", async () => {
    // Other searches wait for the model, longer than the wait: their words said little.
    const others = Array.from({ length: 60 }, (_, i) =>
      embedder.embedQuery(long(1_000 + i), Date.now() + 60_000, 0.7),
    );
    const waitMs = 300;
    // Words that matched well: the queries ahead would outlast the wait, so the static tier reads it.
    const wellMatched = await requestMeaning(
      embedder,
      ["list the open issues of the billing repo"],
      waitMs,
      0.9,
    );
    expect(wellMatched.tier).toBe("static");
    // Words that matched nothing: it goes before them, and is read by the model in time.
    const paraphrase = await requestMeaning(embedder, ["should I bring a coat on the hike"], waitMs, 0.05);
    expect(paraphrase.tier).toBe("model");
    await Promise.all(others);
  });

  it("gives every request of a burst the model the next time it is asked, though none waited for it", async () => {
    const burst = Array.from({ length: 40 }, (_, i) => `a request of the burst about topic ${i}`);
    for (const text of burst) expect((await requestMeaning(embedder, [text], 0)).tier).toBe("static");
    await Promise.all(burst.map((text) => embedded(embedder, text)));
    for (const text of burst) expect((await requestMeaning(embedder, [text], 0)).tier).toBe("model");
  });
});

describe("requestMeaning without a static tier", () => {
  let embedder: Embedder;
  beforeAll(async () => {
    embedder = await Embedder.open(modelWithoutStaticTier(), { threads: 1 });
  });
  afterAll(() => embedder.close());

  it("ranks by words what the model does not read in time, and says how many texts", async () => {
    expect(embedder.staticTier).toBeUndefined();
    const meaning = await requestMeaning(embedder, ["a request never asked", "and another never asked"], 0);
    expect(meaning).toMatchObject({ tier: "none", vectors: [], late: 2, failed: 0 });
  });
});
