import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CALIBRATION } from "../../src/semantic/calibration.ts";
import { Embedder, EmbedderBusy } from "../../src/semantic/embedder.ts";
import { MODEL_DIR } from "./model-dir.ts";

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
}

describe("Embedder (the shipped model: all-MiniLM-L6-v2 fine-tuned for tools)", () => {
  let embedder: Embedder;
  beforeAll(async () => {
    embedder = await Embedder.open(MODEL_DIR);
  });
  afterAll(async () => {
    await embedder.close();
  });

  it("reads the dimension from the model and names the model by its folder and weights", () => {
    expect(embedder.dims).toBe(384);
    expect(embedder.modelId).toMatch(/^all-MiniLM-L6-v2@[0-9a-f]{16}$/);
  });

  it("scores cosines with the curve its folder's calibration.json holds", () => {
    const file = JSON.parse(readFileSync(join(MODEL_DIR, "calibration.json"), "utf8")) as object;
    expect(embedder.calibration).toEqual(file);
  });

  it("reads its vocabulary's whole words, which a request's slips are repaired against", () => {
    expect(embedder.words.size).toBeGreaterThan(20_000);
    expect(embedder.words.has("umbrella")).toBe(true);
    expect(embedder.words.has("bre")).toBe(false);
    expect(embedder.words.repair("umbrel")).toBe("umbrella");
  });

  it("gives the model card's sentence pair the similarity its float weights give (within int8 error)", async () => {
    const food = await embedder.embedQuery("A man is eating food.");
    const bread = await embedder.embedQuery("A man is eating a piece of bread.");
    expect(dot(food, food)).toBeCloseTo(1, 5);
    // sentence-transformers on the fine-tuned float weights train.sh saves (the published model: 0.7553).
    expect(Math.abs(dot(food, bread) - 0.753)).toBeLessThan(0.015);
  });

  it("ranks the paraphrased tool first", async () => {
    const tools = await embedder.embedTexts([
      "send email: Send an email message to a recipient",
      "get weather forecast: Get the weather forecast for a city",
      "create pull request: Open a pull request on a GitHub repository",
      "query database: Run a SQL query against the database",
    ]);
    const query = await embedder.embedQuery("do I need an umbrella in Oslo this weekend?");
    const similarities = tools.map((tool) => dot(tool, query));
    expect(similarities.indexOf(Math.max(...similarities))).toBe(1);
  });

  it("embeds texts in batches, each text's vector the same as alone (the shipped graph quantizes per token)", async () => {
    expect(embedder.batchable).toBe(true);
    const texts = Array.from(
      { length: 20 },
      (_, i) => `tool number ${i} ${"with a longer text ".repeat(i % 4)}`,
    );
    const vectors = await embedder.embedTexts(texts);
    expect(vectors).toHaveLength(20);
    const alone = await embedder.embedQuery(texts[19] as string);
    expect(vectors[19]).toEqual(alone);
  });

  it("embeds queries asked at once together, each the same as asked alone", async () => {
    const questions = Array.from(
      { length: 12 },
      (_, i) => `which tool lists the open issues of project ${i}?`,
    );
    const together = await Promise.all(questions.map((q) => embedder.embedQuery(q)));
    const fresh = await Embedder.open(MODEL_DIR, { threads: 1 });
    try {
      expect(await fresh.embedQuery(questions[7] as string)).toEqual(together[7]);
    } finally {
      await fresh.close();
    }
  });

  it("answers a query asked while tools are indexed before the indexing finishes", async () => {
    const finished: string[] = [];
    const tools = embedder
      .embedTexts(Array.from({ length: 64 }, (_, i) => `background tool ${i}`))
      .then(() => finished.push("tools"));
    const query = embedder
      .embedQuery("a query asked while tools are indexed")
      .then(() => finished.push("query"));
    await Promise.all([tools, query]);
    expect(finished).toEqual(["query", "tools"]);
  });

  it("has a static tier in the model's space: a request's static vector is close to the model's", async () => {
    const text = "create a pull request on the billing repository";
    const byModel = await embedder.embedQuery(text);
    const byStaticTier = embedder.staticTier?.embed(text) as Float32Array;
    expect(dot(byStaticTier, byStaticTier)).toBeCloseTo(1, 5);
    expect(dot(byStaticTier, byModel)).toBeGreaterThan(0.8);
  });

  it("answers a repeated query from its cache with the same vector", async () => {
    const first = embedder.embedQuery("list open pull requests");
    expect(embedder.embedQuery("list open pull requests")).toBe(first);
    expect(await first).toHaveLength(384);
  });

  it("truncates a 1,000-word query to the model's length, keeping its end marker, instead of stalling", async () => {
    const words = Array.from({ length: 1_000 }, (_, i) => `word${i}`).join(" ");
    const truncated = await embedder.embedQuery(words);
    // The first 126 word pieces decide the vector; what follows them is cut.
    const longer = await embedder.embedQuery(`${words} and a different ending about weather`);
    expect(dot(truncated, longer)).toBeCloseTo(1, 5);
  });
});

describe("Embedder under load", () => {
  it("refuses a query at once when too many wait, and takes queries again once they are answered", async () => {
    const embedder = await Embedder.open(MODEL_DIR, { threads: 1, maxQueuedQueries: 4 });
    try {
      const waiting = Array.from({ length: 4 }, (_, i) => embedder.embedQuery(`a request never seen ${i}`));
      expect(embedder.queriesWaiting).toBe(4);
      await expect(embedder.embedQuery("one too many")).rejects.toBeInstanceOf(EmbedderBusy);
      // A refused query is not cached: asked again later, it is embedded.
      await Promise.all(waiting);
      expect(embedder.queriesWaiting).toBe(0);
      expect(await embedder.embedQuery("one too many")).toHaveLength(384);
    } finally {
      await embedder.close();
    }
  });
});

describe("Embedder.close", () => {
  it("waits for the inference under way instead of ending its thread mid-run (which aborts the process)", async () => {
    const embedder = await Embedder.open(MODEL_DIR);
    const indexing = embedder
      .embedTexts(Array.from({ length: 64 }, (_, i) => `a tool being indexed ${i}`))
      .catch((error: unknown) => error);
    // Closed while a text is embedded: this process would die of SIGABRT if the worker were cut off.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await embedder.close();
    expect(String(await indexing)).toMatch(/closed/);
    await expect(embedder.embedQuery("after close")).rejects.toThrow(/closed/);
  });
});

describe("Embedder.open on a broken model folder", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "wayfind-model-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function brokenCopy(name: string, damage: (copy: string) => void): string {
    const copy = join(dir, name);
    cpSync(MODEL_DIR, copy, { recursive: true });
    damage(copy);
    return copy;
  }

  it("names the missing ONNX file", async () => {
    const copy = brokenCopy("no-onnx", (c) => rmSync(join(c, "onnx"), { recursive: true }));
    await expect(Embedder.open(copy)).rejects.toThrow(`${join(copy, "onnx/model_quantized.onnx")}: missing`);
  });

  it("names a tokenizer file that is not JSON", async () => {
    const copy = brokenCopy("bad-tokenizer", (c) => writeFileSync(join(c, "tokenizer.json"), "{not json"));
    await expect(Embedder.open(copy)).rejects.toThrow(`${join(copy, "tokenizer.json")}: not valid JSON`);
  });

  it("names an ONNX file that is not a model", async () => {
    const copy = brokenCopy("bad-onnx", (c) =>
      writeFileSync(join(c, "onnx/model_quantized.onnx"), "garbage"),
    );
    await expect(Embedder.open(copy)).rejects.toThrow(
      `${join(copy, "onnx/model_quantized.onnx")}: not a loadable ONNX model`,
    );
  });

  it("scores a folder without calibration.json with the default curve", async () => {
    const copy = brokenCopy("no-calibration", (c) => rmSync(join(c, "calibration.json")));
    const embedder = await Embedder.open(copy, { threads: 1 });
    expect(embedder.calibration).toEqual(DEFAULT_CALIBRATION);
    await embedder.close();
  });

  it("names a calibration.json that would not keep scores in order", async () => {
    const copy = brokenCopy("bad-calibration", (c) =>
      writeFileSync(join(c, "calibration.json"), JSON.stringify({ intercept: 1, slope: -2 })),
    );
    await expect(Embedder.open(copy)).rejects.toThrow(
      `${join(copy, "calibration.json")}: "slope" must be a positive number (got -2)`,
    );
  });

  it("names a static tier distilled from another model", async () => {
    const copy = brokenCopy("other-teacher", (c) =>
      writeFileSync(join(c, "static/config.json"), JSON.stringify({ teacher_sha256: "0".repeat(64) })),
    );
    await expect(Embedder.open(copy, { threads: 1 })).rejects.toThrow(
      `${join(copy, "static/config.json")}: the static tier was distilled from another model`,
    );
  });

  it("names a static tier file cut short", async () => {
    const copy = brokenCopy("short-static", (c) => {
      const file = join(c, "static/vectors.bin");
      writeFileSync(file, readFileSync(file).subarray(0, 100_000));
    });
    await expect(Embedder.open(copy, { threads: 1 })).rejects.toThrow(
      `${join(copy, "static/vectors.bin")}: 100000 bytes, expected`,
    );
  });

  it("names a folder that does not exist", async () => {
    await expect(Embedder.open(join(dir, "absent"))).rejects.toThrow(
      /absent\/onnx\/model_quantized\.onnx: missing/,
    );
  });
});
