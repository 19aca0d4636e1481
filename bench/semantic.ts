/**
 * Hybrid search's cost, measured as a server runs it by default (its quality: bench/search-quality.ts).
 * In process, over a 10,000-tool catalog: query embedding (cold and cached), SearchTools by words
 * alone and hybrid (a request never seen before, and the same again), the cosine scan, and embedding
 * the catalog in the background while the event loop's longest stall is watched. Then `wayfind serve`
 * processes (the default launch: `node bin/wayfind.js serve`) with the same catalog: resident memory
 * listening, once every vector is ready, and at its peak, hybrid and words only.
 * Usage: node --import tsx bench/semantic.ts [--tools N] [--skip-servers]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { DEFAULTS } from "../src/config/defaults.ts";
import { openDatabase } from "../src/database/sqlite.ts";
import { discoveryMigrations, IndexHost, ToolRegistry } from "../src/discovery/index.ts";
import {
  Embedder,
  semanticMigrations,
  semanticToolSearch,
  TextVectors,
  toolEmbeddingText,
  toolTexts,
} from "../src/semantic/index.ts";
import { TOOL_TEXT_VERSION } from "../src/semantic/text.ts";
import { clipQuery, growCatalog, readQueries, table, writeCatalogFiles } from "./lib/discovery-data.ts";
import { prepareWayfind, spawnServer, wayfindServeArgs } from "./lib/grpc-bench-support.ts";
import { BENCH_MODEL_DIR, staticOnly } from "./lib/hybrid.ts";

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const ms = (x: number) => `${x.toFixed(2)} ms`;

/** A table row: the latency percentiles of `run` over `inputs`, called one after another. */
async function timedRow<T>(
  measure: string,
  note: string,
  inputs: readonly T[],
  run: (input: T) => unknown,
): Promise<string[]> {
  const samples: number[] = [];
  for (const input of inputs) {
    const t0 = performance.now();
    await run(input);
    samples.push(performance.now() - t0);
  }
  const sorted = [...samples].sort((a, b) => a - b);
  return [measure, ms(percentile(sorted, 50)), ms(percentile(sorted, 95)), ms(percentile(sorted, 99)), note];
}

async function inProcess(
  embedder: Embedder,
  queries: readonly string[],
  shortQueries: readonly string[],
  toolCount: number,
): Promise<void> {
  const rows: string[][] = [["measure", "p50", "p95", "p99", "note"]];
  const embed = (q: string) => embedder.embedQuery(q);
  rows.push(
    await timedRow("query embedding, cold", `${queries.length} requests, one at a time`, queries, embed),
  );
  rows.push(await timedRow("query embedding, cached", "the same requests again (LRU)", queries, embed));
  const staticTier = embedder.staticTier;
  if (staticTier)
    rows.push(
      await timedRow("query embedding, static tier", "the same requests, on the event loop", queries, (q) =>
        staticTier.embed(q),
      ),
    );

  // The server's semantic search computes the catalog's vectors in the worker while a 10 ms timer on
  // the main thread notes how late it fires.
  const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-semantic-"));
  const db = openDatabase(join(dir, "wayfind.db"), [...discoveryMigrations, ...semanticMigrations]);
  const semantic = semanticToolSearch({
    db,
    embedder,
    weight: DEFAULTS.toolSearch.semantic.weight,
    // Each request waits for its meaning here: this measures what embedding costs.
    maxWaitMs: 600_000,
  });
  const registry = new ToolRegistry(db);
  const index = new IndexHost(registry, {
    onIndexBuilt: (built) => semantic.catalogChanged(built, toolTexts(built)),
  });
  await registry.register("grown", growCatalog(toolCount));
  await index.ready();
  const idle = monitorEventLoopDelay({ resolution: 5 });
  idle.enable();
  await new Promise((done) => setTimeout(done, 3_000));
  idle.disable();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  let lastTick = performance.now();
  let stalls = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    if (now - lastTick - 10 > 50) stalls++;
    lastTick = now;
  }, 10);
  loop.enable();
  const t0 = performance.now();
  await semantic.settled();
  const seconds = (performance.now() - t0) / 1000;
  loop.disable();
  clearInterval(probe);
  rows.push([
    `embedding ${toolCount} tool texts`,
    `${(toolCount / seconds).toFixed(0)} texts/s`,
    "",
    "",
    `${seconds.toFixed(1)} s, batched; main loop delay max ${(loop.max / 1e6).toFixed(1)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, ${stalls} timer ticks over 50 ms late (idle before: max ${(idle.max / 1e6).toFixed(1)} ms)`,
  ]);

  // SearchTools' in-process path as ToolService runs it (the gRPC layer's cost: bench/grpc-10k.ts), for
  // long requests of several sentences (ToolBench: read as several intents, each embedded) and short
  // ones (MetaTool).
  const lexical = (q: string) => index.search({ query: q, limit: 8 });
  const hybrid = async (q: string) => {
    const prepared = index.prepare({ query: q, limit: 8 });
    return index.searchPrepared(prepared, { semantic: await semantic.evidence(index.meaningOf(prepared)) });
  };
  // Every request read by the static tier (what a server answers with when the model is not in time),
  // over the vectors the model stored for the tools.
  const semanticStatic = staticTier
    ? semanticToolSearch({
        db,
        embedder: staticOnly(embedder),
        weight: DEFAULTS.toolSearch.semantic.weight,
        maxWaitMs: 0,
      })
    : undefined;
  if (semanticStatic) {
    semanticStatic.catalogChanged(await index.ready(), toolTexts(await index.ready()));
    await semanticStatic.settled();
  }
  const hybridStatic = async (q: string) => {
    const prepared = index.prepare({ query: q, limit: 8 });
    const evidence = await (semanticStatic as NonNullable<typeof semanticStatic>).evidence(
      index.meaningOf(prepared),
    );
    return index.searchPrepared(prepared, { semantic: evidence });
  };
  for (const [label, requests] of [
    ["long requests", queries],
    ["short requests", shortQueries],
  ] as const) {
    const texts = requests.reduce(
      (sum, q) => sum + index.meaningOf(index.prepare({ query: q })).texts.length,
      0,
    );
    const note = `${label}, ${(texts / requests.length).toFixed(1)} texts embedded per request`;
    rows.push(await timedRow(`SearchTools, words only, ${toolCount} tools`, label, requests, lexical));
    // Another text each (the LRU would answer the originals), within the query's length limit.
    const fresh = requests.map((q) => `${q.slice(0, 504)} (again)`);
    rows.push(
      await timedRow(`SearchTools, hybrid, ${toolCount} tools`, `${note}, never seen before`, fresh, hybrid),
    );
    rows.push(
      await timedRow(
        `SearchTools, hybrid, ${toolCount} tools`,
        `${note}, the same again (cached)`,
        fresh,
        hybrid,
      ),
    );
    if (semanticStatic)
      rows.push(
        await timedRow(
          `SearchTools, hybrid by the static tier, ${toolCount} tools`,
          `${label}, never seen before (the model not waited for)`,
          requests.map((q) => `${q.slice(0, 503)} (static)`),
          hybridStatic,
        ),
      );
  }

  // The stored vectors read back as the server packs them, for the scan alone.
  const vectors = new TextVectors(db, embedder, "semantic_tool_vectors", TOOL_TEXT_VERSION);
  await vectors.sync(
    [...registry.all()].map((t) => ({
      owner: t.owner,
      name: t.name,
      hash: t.hash,
      text: () => toolEmbeddingText(t),
    })),
  );
  const { slab } = vectors;
  const scanQueries = await Promise.all(queries.slice(0, 60).map((q) => embedder.embedQuery(q)));
  rows.push(
    await timedRow(`int8 scan, ${vectors.size} vectors`, "one query", scanQueries, (q) => slab.scan([q])),
  );
  const triples = Array.from({ length: 20 }, (_, i) => scanQueries.slice(3 * i, 3 * i + 3));
  rows.push(
    await timedRow(`int8 scan, ${vectors.size} vectors`, "best of 3 queries, one pass", triples, (qs) =>
      slab.scan(qs),
    ),
  );
  console.log(table(rows));
  await semantic.close();
  await semanticStatic?.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
}

/** `wayfind serve` with the catalog, polled until every vector is ready: RSS then and at its peak. */
async function servers(toolCount: number): Promise<void> {
  const runs = await prepareWayfind(process.cwd());
  const work = mkdtempSync(join(tmpdir(), "wayfind-bench-rss-"));
  const catalogs = writeCatalogFiles(work, growCatalog(toolCount));
  const rows: string[][] = [
    ["server", "listening after", "RSS listening", "ready after", "RSS ready", "peak RSS"],
  ];
  for (const [label, extra] of [
    ["hybrid (default)", ""],
    ["words only", "tool_search: {semantic: {enabled: false}}\n"],
  ] as const) {
    const config = join(work, `${label.split(" ")[0]}.yaml`);
    writeFileSync(config, `${catalogs}${extra}`);
    const dataDir = join(work, `data-${label.split(" ")[0]}`);
    const t0 = performance.now();
    const server = await spawnServer(wayfindServeArgs(config, dataDir), { logFile: join(work, "log") });
    const listening = performance.now() - t0;
    const atListening = server.rss().nowMiB;
    for (;;) {
      const ready = (await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).json()) as {
        checks: { semantic: string };
      };
      if (ready.checks.semantic !== "partial") break;
      await new Promise((done) => setTimeout(done, 1_000));
    }
    const readyS = (performance.now() - t0) / 1000;
    const { nowMiB, peakMiB } = server.rss();
    rows.push([
      label,
      `${(listening / 1000).toFixed(1)} s`,
      `${atListening.toFixed(0)} MB`,
      `${readyS.toFixed(1)} s`,
      `${nowMiB.toFixed(0)} MB`,
      `${peakMiB.toFixed(0)} MB`,
    ]);
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(`\n\`wayfind serve\` (${runs}), ${toolCount} tools from a catalog file, fresh data dir`);
  console.log(table(rows));
  rmSync(work, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const started = performance.now();
  const toolCount = option("--tools", 10_000);
  const embedder = await Embedder.open(BENCH_MODEL_DIR);
  console.log(`model ${embedder.modelId}, ${embedder.dims} dimensions`);
  const queries = readQueries("toolbench_queries.jsonl")
    .slice(0, 200)
    .map((q) => clipQuery(q.query));
  const shortQueries = readQueries("metatool_queries.jsonl")
    .filter((_, i) => i % 100 === 0)
    .slice(0, 200)
    .map((q) => clipQuery(q.query));
  await inProcess(embedder, queries, shortQueries, toolCount);
  await embedder.close();
  if (!process.argv.includes("--skip-servers")) await servers(toolCount);
  console.log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
