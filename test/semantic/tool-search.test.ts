import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MatchType, SemanticStatus, SemanticTier } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { loadConfig } from "../../src/config/index.ts";
import { openDatabase } from "../../src/database/sqlite.ts";
import { discoveryMigrations, IndexHost, ToolRegistry } from "../../src/discovery/index.ts";
import type { EmbedderOptions } from "../../src/semantic/embedder.ts";
import { Embedder, semanticMigrations, semanticToolSearch, toolTexts } from "../../src/semantic/index.ts";
import { startServer } from "../../src/server/app.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { MODEL_DIR, modelWithoutStaticTier } from "./model-dir.ts";

const CATALOG = [
  {
    name: "get_forecast",
    description: "Weather forecast: rain, temperature and wind for a city over the next days.",
  },
  { name: "send_email", description: "Send an email message to a recipient." },
  { name: "create_issue", description: "Open a new issue in a GitHub repository." },
  { name: "run_sql", description: "Run a SQL query against the database." },
  { name: "take_screenshot", description: "Capture a screenshot of the current browser page." },
  { name: "translate_text", description: "Translate text from one language to another." },
  { name: "book_flight", description: "Book a flight between two airports." },
  { name: "convert_currency", description: "Convert an amount of money between currencies." },
];
const SECRET = [{ name: "secret_forecast", description: "Internal weather forecast with umbrella advice." }];
const UMBRELLA = "do I need an umbrella in Oslo this weekend?";

interface Logged {
  readonly msg: string;
  readonly reused?: number;
  readonly embedded?: number;
}

/** A server with semantic ranking on, logging into `lines`. */
function startSemanticServer(lines: Logged[], dataDir?: string): Promise<TestServer> {
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line) as Logged) });
  return startTestServer(
    {
      catalogs: [
        { path: "tools.jsonl", namespace: "tools" },
        { path: "secret.jsonl", namespace: "internal" },
      ],
      visibility: [
        { match: { tenant: "acme" }, deny: ["internal.*"] },
        { match: { tenant: "globex" }, allow: ["*"] },
      ],
      tool_search: { semantic: { model_dir: MODEL_DIR } },
    },
    { dataDir: dataDir ?? catalogDir(), logger },
  );
}

function catalogDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-semantic-"));
  writeFileSync(join(dir, "tools.jsonl"), CATALOG.map((t) => JSON.stringify(t)).join("\n"));
  writeFileSync(join(dir, "secret.jsonl"), SECRET.map((t) => JSON.stringify(t)).join("\n"));
  return dir;
}

/** Searches until every visible tool has its vector (semantic_status READY). */
async function searchWhenReady(server: TestServer, query: string, tenantId = "acme") {
  const client = server.grpc(ToolDiscoveryService);
  for (let attempt = 0; attempt < 300; attempt++) {
    const response = await client.searchTools({ caller: { tenantId }, query });
    if (response.semanticStatus === SemanticStatus.READY) return response;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("tool vectors never became ready");
}

describe("semantic tool search over gRPC (the shipped all-MiniLM-L6-v2 model)", () => {
  const lines: Logged[] = [];
  let wayfind: TestServer;
  beforeAll(async () => {
    wayfind = await startSemanticServer(lines);
  }, 60_000);
  afterAll(() => wayfind?.stop({ keepData: true }));

  it("finds by meaning a tool that shares no word with the request", async () => {
    const lexicalOnly = await startTestServer(
      { catalogs: [{ path: "tools.jsonl", namespace: "tools" }] },
      { dataDir: catalogDir() },
    );
    const lexical = await lexicalOnly
      .grpc(ToolDiscoveryService)
      .searchTools({ caller: { tenantId: "acme" }, query: UMBRELLA });
    await lexicalOnly.stop({ keepData: true });
    expect(lexical.tools.map((t) => t.name)).not.toContain("tools.get_forecast");

    const response = await searchWhenReady(wayfind, UMBRELLA);
    const top = response.tools[0];
    expect(top?.name).toBe("tools.get_forecast");
    expect(top?.matchType).toBe(MatchType.SEMANTIC);
    expect(top?.semanticScore).toBeGreaterThan(0);
    expect(top?.score).toBeGreaterThan(0);
    expect(top?.score).toBeLessThanOrEqual(1);
  });

  it("counts searches by the tier that read them in /metrics, beside the model's capacity", async () => {
    await searchWhenReady(wayfind, "which tool converts euros to dollars");
    const metric = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? 0);
    for (let attempt = 0; ; attempt++) {
      // Reports of searches are counted once their batch commits.
      const text = await (await fetch(`${wayfind.baseUrl}/metrics`)).text();
      const byModel = metric(
        text,
        /^wayfind_search_semantic_total\{kind="tool",status="ready",tier="model"\} (\S+)/m,
      );
      if (byModel >= 1 || attempt >= 100) {
        expect(byModel).toBeGreaterThanOrEqual(1);
        expect(metric(text, /^wayfind_semantic_capacity_texts_per_second (\S+)/m)).toBeGreaterThan(0);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it("never returns or counts a tool the caller may not see", async () => {
    const acme = await searchWhenReady(wayfind, UMBRELLA, "acme");
    expect(acme.tools.map((t) => t.name)).not.toContain("internal.secret_forecast");
    expect(acme.semanticPending).toBe(0);
    const globex = await searchWhenReady(wayfind, UMBRELLA, "globex");
    expect(globex.tools.map((t) => t.name)).toContain("internal.secret_forecast");
  });

  it("ranks a newly registered tool lexically until its vector exists, and says so", async () => {
    const client = wayfind.grpc(ToolDiscoveryService);
    await client.registerTools({
      caller: { tenantId: "acme" },
      source: "late",
      tools: [{ name: "umbrella_advice", description: "Tells whether to take an umbrella." }],
    });
    const first = await client.searchTools({ caller: { tenantId: "acme" }, query: "umbrella" });
    expect(first.tools[0]?.name).toBe("umbrella_advice");
    // PARTIAL names what was missing: tools without their vector, or texts of the request not embedded in time.
    if (first.semanticStatus === SemanticStatus.PARTIAL)
      expect(first.semanticPending + first.semanticTextsPending).toBeGreaterThan(0);
    const ready = await searchWhenReady(wayfind, "umbrella");
    expect(ready.semanticPending).toBe(0);
    expect(ready.tools[0]?.name).toBe("umbrella_advice");
  });

  it("keeps the vectors across a restart: nothing is embedded again", async () => {
    await searchWhenReady(wayfind, UMBRELLA);
    await wayfind.stop({ keepData: true });
    const after: Logged[] = [];
    wayfind = await startSemanticServer(after, wayfind.dataDir);
    await searchWhenReady(wayfind, UMBRELLA);
    const synced = after.filter((line) => line.msg === "tool vectors synced");
    expect(synced.length).toBeGreaterThan(0);
    expect(synced.every((line) => line.embedded === 0)).toBe(true);
    expect(synced[0]?.reused).toBeGreaterThanOrEqual(CATALOG.length);
  }, 60_000);
});

/** CATALOG in process, every tool's vector computed: the pieces ToolService puts together. */
async function semanticCatalog(embedderOptions: EmbedderOptions, maxWaitMs: number, modelDir = MODEL_DIR) {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-semantic-catalog-"));
  const db = openDatabase(join(dir, "wayfind.db"), [...discoveryMigrations, ...semanticMigrations]);
  const embedder = await Embedder.open(modelDir, embedderOptions);
  const semantic = semanticToolSearch({ db, embedder, weight: 0.3, maxWaitMs });
  const registry = new ToolRegistry(db);
  const index = new IndexHost(registry, {
    onIndexBuilt: (built) => semantic.catalogChanged(built, toolTexts(built)),
  });
  await registry.register("s", CATALOG);
  await index.ready();
  await semantic.settled();
  return {
    embedder,
    semantic,
    index,
    registry,
    async close() {
      await semantic.close();
      await embedder.close();
      db.close();
    },
  };
}

describe("a request asked again", () => {
  it("finds a tool whose vector came since it was last asked, on the same build of the index", async () => {
    const { semantic, index, registry, close } = await semanticCatalog({}, 60_000);
    try {
      await registry.register("late", [
        { name: "umbrella_advice", description: "Tells whether to take an umbrella this weekend." },
      ]);
      const build = await index.ready();
      const request = { query: UMBRELLA, limit: 3 };
      // Asked before the new tool's vector exists: its nearest tools are kept for this build.
      const before = await semantic.evidence(index.meaningOf(index.prepare(request)));
      expect(before.index).toBe(build);
      expect(before.report.pending).toBe(1);
      expect(before.closest.map((doc) => build.docs[doc]?.name)).not.toContain("umbrella_advice");
      await semantic.settled();
      const after = await semantic.evidence(index.meaningOf(index.prepare(request)));
      expect(after.index).toBe(build);
      expect(after.report.pending).toBe(0);
      expect(build.docs[after.closest[0] as number]?.name).toBe("umbrella_advice");
    } finally {
      await close();
    }
  });
});

describe("a search that cannot wait for the model", () => {
  /** Other callers' requests, never seen before, that keep the model busy for longer than a short wait. */
  const keepBusy = (embedder: Embedder) =>
    Array.from({ length: 40 }, (_, i) =>
      embedder.embedQuery(`another caller's request number ${i}, never asked before`),
    );

  it("is read by the model's static tier when the model is busy, says so, and by the model once it has embedded the request", async () => {
    const { embedder, semantic, index, close } = await semanticCatalog({ threads: 1 }, 5);
    try {
      const backlog = keepBusy(embedder);
      const request = { query: UMBRELLA, limit: 5 };
      const meaning = index.meaningOf(index.prepare(request));
      const busy = await semantic.evidence(meaning);
      expect(busy.report).toEqual({ status: "ready", tier: "static", pending: 0, textsPending: 0 });
      const byStaticTier = index.search(request, { semantic: busy });
      expect(byStaticTier.semantic.tier).toBe("static");
      expect(byStaticTier.tools[0]?.name).toBe("get_forecast");
      expect(byStaticTier.tools[0]?.semanticScore).toBeGreaterThan(0);
      // The model embedded it when it had time: asked again, the request is read by the model.
      await Promise.all([...backlog, ...meaning.texts.map((t) => embedder.embedQuery(t))]);
      const later = await semantic.evidence(index.meaningOf(index.prepare(request)));
      expect(later.report).toEqual({ status: "ready", tier: "model", pending: 0, textsPending: 0 });
      expect(index.search(request, { semantic: later }).tools[0]?.name).toBe("get_forecast");
    } finally {
      await close();
    }
  });

  it("is answered by words when the model is busy and has no static tier, says PARTIAL and which texts", async () => {
    const { embedder, semantic, index, close } = await semanticCatalog(
      { threads: 1 },
      5,
      modelWithoutStaticTier(),
    );
    try {
      const backlog = keepBusy(embedder);
      const request = { query: UMBRELLA, limit: 5 };
      const meaning = index.meaningOf(index.prepare(request));
      const busy = await semantic.evidence(meaning);
      expect(busy.report).toEqual({ status: "partial", tier: "none", pending: 0, textsPending: 1 });
      const byWords = index.search(request, { semantic: busy });
      expect(byWords.tools.every((t) => t.semanticScore === 0)).toBe(true);
      await Promise.all([...backlog, ...meaning.texts.map((t) => embedder.embedQuery(t))]);
      const later = await semantic.evidence(index.meaningOf(index.prepare(request)));
      expect(later.report).toEqual({ status: "ready", tier: "model", pending: 0, textsPending: 0 });
    } finally {
      await close();
    }
  });

  it("says over gRPC which tier read the request, and reads the same request by the model later", async () => {
    const wayfind = await startTestServer(
      {
        catalogs: [{ path: "tools.jsonl", namespace: "tools" }],
        // No wait at all: a request never seen is always read by the static tier first.
        tool_search: { semantic: { model_dir: MODEL_DIR, max_wait_ms: 0 } },
      },
      { dataDir: catalogDir() },
    );
    try {
      await searchWhenReady(wayfind, "warm up: every tool has its vector");
      const client = wayfind.grpc(ToolDiscoveryService);
      const first = await client.searchTools({ caller: { tenantId: "acme" }, query: UMBRELLA });
      expect(first).toMatchObject({
        semanticStatus: SemanticStatus.READY,
        semanticTier: SemanticTier.STATIC,
        semanticTextsPending: 0,
        semanticPending: 0,
      });
      for (let attempt = 0; attempt < 300; attempt++) {
        const again = await client.searchTools({ caller: { tenantId: "acme" }, query: UMBRELLA });
        if (again.semanticTier === SemanticTier.MODEL) {
          expect(again.semanticStatus).toBe(SemanticStatus.READY);
          expect(again.tools[0]?.name).toBe("tools.get_forecast");
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error("the model never read the request");
    } finally {
      await wayfind.stop();
    }
  }, 60_000);
});

describe("semantic mode start-up", () => {
  it("fails with the missing model file named, before anything is created", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-no-model-"));
    const configFile = join(dir, "wayfind.yaml");
    writeFileSync(
      configFile,
      `server: {port: 0, data_dir: ${join(dir, "data")}}\ntool_search: {semantic: {model_dir: empty-model}}\n`,
    );
    const config = loadConfig(configFile, {});
    await expect(startServer(config, pino({ level: "silent" }))).rejects.toThrow(
      /empty-model.*(onnx|tokenizer|config)/,
    );
  });
});

describe("a request read as several texts (its intents)", () => {
  it("gives each tool its best similarity over the texts, so each intent's tool scores as if asked alone", async () => {
    const { semantic, index, close } = await semanticCatalog({}, 60_000);
    try {
      const rain = "Will I get soaked walking around Oslo on Saturday?";
      const yen = "What are 300 dollars worth in yen?";
      // The request's own reading replaced by the given texts.
      const semanticScores = async (texts: string[]) => {
        const request = { query: texts.join(" "), limit: 20 };
        const evidence = await semantic.evidence({ ...index.meaningOf(index.prepare(request)), texts });
        return new Map(
          index.search(request, { semantic: evidence }).tools.map((t) => [t.name, t.semanticScore]),
        );
      };
      const both = await semanticScores([rain, yen]);
      expect(both.get("get_forecast")).toBe((await semanticScores([rain])).get("get_forecast"));
      expect(both.get("convert_currency")).toBe((await semanticScores([yen])).get("convert_currency"));
      expect([...both.keys()].slice(0, 2).sort()).toEqual(["convert_currency", "get_forecast"]);
    } finally {
      await close();
    }
  });
});
