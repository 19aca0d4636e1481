import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import { Embedder, type TextEmbedder } from "../../src/semantic/embedder.ts";
import { semanticMigrations, TextVectors, type ToolText } from "../../src/semantic/vectors.ts";
import { MODEL_DIR } from "./model-dir.ts";

/** The real embedder, counting the texts it is asked to embed (and optionally posing as another model). */
class CountingEmbedder implements TextEmbedder {
  embeddedTexts: string[] = [];
  constructor(
    private readonly real: Embedder,
    readonly modelId = real.modelId,
  ) {}
  get dims(): number {
    return this.real.dims;
  }
  embedTexts(texts: readonly string[]): Promise<Float32Array[]> {
    this.embeddedTexts.push(...texts);
    return this.real.embedTexts(texts);
  }
}

/** The real embedder, holding every request until `open` (to look at a sync half way). */
class GatedEmbedder implements TextEmbedder {
  private release = () => {};
  private readonly released = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  private markAsked = () => {};
  /** Settles when the first texts are asked for. */
  readonly asked = new Promise<void>((resolve) => {
    this.markAsked = resolve;
  });
  constructor(private readonly real: Embedder) {}
  get modelId(): string {
    return this.real.modelId;
  }
  get dims(): number {
    return this.real.dims;
  }
  open(): void {
    this.release();
  }
  async embedTexts(texts: readonly string[]): Promise<Float32Array[]> {
    this.markAsked();
    await this.released;
    return this.real.embedTexts(texts);
  }
}

/** A record of the vector store with this text. */
const record = (owner: string, name: string, hash: string, text: string): ToolText => ({
  owner,
  name,
  hash,
  text: () => text,
});

const TOOLS: ToolText[] = [
  record("", "send_email", "h1", "send email: Send an email message to a recipient"),
  record("", "get_weather", "h2", "get weather: Get the weather forecast for a city"),
  record("acme", "get_weather", "h3", "get weather: Acme's own forecast service"),
  record("", "run_sql", "h4", "run sql: Run a SQL query against the database"),
];

describe("TextVectors", () => {
  let embedder: Embedder;
  let dir: string;
  let file: number;
  beforeAll(async () => {
    embedder = await Embedder.open(MODEL_DIR);
    dir = mkdtempSync(join(tmpdir(), "wayfind-vectors-"));
    file = 0;
  });
  afterAll(async () => {
    await embedder.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh database file; `reopen` opens the same file again, as a restarted server would. */
  function freshDatabase(): { db: Db; reopen: () => Db } {
    const path = join(dir, `vectors-${file++}.db`);
    return {
      db: openDatabase(path, semanticMigrations),
      reopen: () => openDatabase(path, semanticMigrations),
    };
  }

  it("embeds every tool once, per owner, and holds their vectors for a scan", async () => {
    const { db } = freshDatabase();
    const counting = new CountingEmbedder(embedder);
    const vectors = new TextVectors(db, counting);
    const report = await vectors.sync(TOOLS);
    expect(report).toEqual({ reused: 0, embedded: 4, removed: 0, superseded: false });
    expect(counting.embeddedTexts).toHaveLength(4);
    expect(vectors.has("acme", "get_weather")).toBe(true);
    expect(vectors.has("acme", "send_email")).toBe(false);
    const query = await embedder.embedQuery("will it rain tomorrow in Paris");
    const entries = [...vectors.entries()];
    const closest = entries.reduce((best, e) =>
      vectors.slab.exact(e.slot, [query]) > vectors.slab.exact(best.slot, [query]) ? e : best,
    );
    expect(closest.name).toBe("get_weather");
  });

  it("reuses the stored vectors after a restart, embedding nothing", async () => {
    const { db, reopen } = freshDatabase();
    await new TextVectors(db, new CountingEmbedder(embedder)).sync(TOOLS);
    const before = new TextVectors(db, embedder);
    await before.sync(TOOLS);
    db.close();
    const counting = new CountingEmbedder(embedder);
    const restarted = new TextVectors(reopen(), counting);
    const report = await restarted.sync(TOOLS);
    expect(report).toEqual({ reused: 4, embedded: 0, removed: 0, superseded: false });
    expect(counting.embeddedTexts).toEqual([]);
    const vectorOf = (v: TextVectors) => v.slab.vector(v.slotOf("", "run_sql") ?? -1);
    expect(vectorOf(restarted)).toEqual(vectorOf(before));
  });

  it("recomputes only the tool whose record hash changed, and drops the vectors of removed tools", async () => {
    const { db } = freshDatabase();
    await new TextVectors(db, embedder).sync(TOOLS);
    const counting = new CountingEmbedder(embedder);
    const vectors = new TextVectors(db, counting);
    const changed = record("", "run_sql", "h4-new", "run sql: Run a read-only SQL query");
    const report = await vectors.sync([TOOLS[0], TOOLS[1], changed] as ToolText[]);
    expect(report).toEqual({ reused: 2, embedded: 1, removed: 1, superseded: false });
    expect(counting.embeddedTexts).toEqual([changed.text()]);
    expect(vectors.has("acme", "get_weather")).toBe(false);
    expect(
      db.prepare("SELECT owner, name, record_hash FROM semantic_tool_vectors ORDER BY owner, name").all(),
    ).toEqual([
      { owner: "", name: "get_weather", record_hash: "h2" },
      { owner: "", name: "run_sql", record_hash: "h4-new" },
      { owner: "", name: "send_email", record_hash: "h1" },
    ]);
  });

  it("embeds a text once however many records share it (tenants registering the same tools)", async () => {
    const { db } = freshDatabase();
    const counting = new CountingEmbedder(embedder);
    const vectors = new TextVectors(db, counting);
    const shared = "get weather: Get the weather forecast for a city";
    const tenants = ["acme", "globex", "initech"].map((owner) => record(owner, "get_weather", "h", shared));
    const report = await vectors.sync(tenants);
    expect(report).toEqual({ reused: 0, embedded: 3, removed: 0, superseded: false });
    expect(counting.embeddedTexts).toEqual([shared]);
    const [a, b] = ["acme", "initech"].map((owner) =>
      vectors.slab.vector(vectors.slotOf(owner, "get_weather") ?? -1),
    );
    expect(a).toEqual(b);
  });

  it("re-embeds everything when the model changes", async () => {
    const { db } = freshDatabase();
    await new TextVectors(db, embedder).sync(TOOLS);
    const otherModel = new CountingEmbedder(embedder, "another-model@0000000000000000");
    const report = await new TextVectors(db, otherModel).sync(TOOLS);
    expect(report).toEqual({ reused: 0, embedded: 4, removed: 0, superseded: false });
    expect(db.prepare("SELECT DISTINCT model_id FROM semantic_tool_vectors").pluck().all()).toEqual([
      "another-model@0000000000000000",
    ]);
  });

  it("re-embeds everything when the way texts are made changes, as for a new model", async () => {
    const { db } = freshDatabase();
    await new TextVectors(db, embedder, "semantic_tool_vectors", "recipe-1").sync(TOOLS);
    const counting = new CountingEmbedder(embedder);
    const report = await new TextVectors(db, counting, "semantic_tool_vectors", "recipe-2").sync(TOOLS);
    expect(report).toEqual({ reused: 0, embedded: 4, removed: 0, superseded: false });
    expect(db.prepare("SELECT DISTINCT model_id FROM semantic_tool_vectors").pluck().all()).toEqual([
      `${embedder.modelId} recipe-2`,
    ]);
  });

  it("serves the vectors that exist while the rest are still being computed", async () => {
    const { db } = freshDatabase();
    await new TextVectors(db, embedder).sync(TOOLS.slice(0, 1));
    const gate = new GatedEmbedder(embedder);
    const vectors = new TextVectors(db, gate);
    const running = vectors.sync(TOOLS);
    // The stored vector is read back before anything is embedded; the others wait for the model.
    await gate.asked;
    expect([...vectors.entries()].map(({ owner, name }) => ({ owner, name }))).toEqual([
      { owner: "", name: "send_email" },
    ]);
    expect(vectors.has("", "run_sql")).toBe(false);
    gate.open();
    await running;
    expect(vectors.size).toBe(4);
  });

  it("reads a large store back in chunks, a turn of the event loop between them", async () => {
    const { db, reopen } = freshDatabase();
    const many = Array.from({ length: 4_500 }, (_, i) => ({
      owner: "",
      name: `tool_${i}`,
      hash: "h",
      text: () => `tool ${i}`,
    }));
    const vector = (await embedder.embedTexts(["a tool"]))[0] as Float32Array;
    const constant: TextEmbedder = {
      modelId: embedder.modelId,
      dims: embedder.dims,
      embedTexts: async (texts) => texts.map(() => vector),
    };
    await new TextVectors(db, constant).sync(many);
    db.close();
    const restarted = new TextVectors(reopen(), constant);
    let turns = 0;
    const ticking = setInterval(() => turns++, 0);
    const report = await restarted.sync(many);
    clearInterval(ticking);
    expect(report).toEqual({ reused: 4_500, embedded: 0, removed: 0, superseded: false });
    expect(restarted.size).toBe(4_500);
    expect(turns).toBeGreaterThan(2);
  });

  it("stops a sync that a newer one superseded, so only the newer one writes", async () => {
    const { db } = freshDatabase();
    const many = Array.from({ length: 40 }, (_, i) => ({
      owner: "",
      name: `tool_${i}`,
      hash: "h",
      text: () => `tool ${i}`,
    }));
    const vectors = new TextVectors(db, embedder);
    const first = vectors.sync(many);
    const second = vectors.sync(many.slice(0, 2));
    expect((await first).superseded).toBe(true);
    expect(await second).toMatchObject({ superseded: false, removed: 0 });
    expect(vectors.size).toBe(2);
    expect(db.prepare("SELECT count(*) FROM semantic_tool_vectors").pluck().get()).toBe(2);
  });
});
