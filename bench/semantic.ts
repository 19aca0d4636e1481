/**
 * Semantic ranking groundwork (issue 14): speed, memory and retrieval quality of src/semantic with the
 * shared all-MiniLM-L6-v2 model. Rows: query embedding (cold and cached), the cosine scan over 10,000
 * vectors, embedding 10,000 tool texts in the worker while the main event loop's longest stall is
 * measured, RSS, semantic-only Recall@1/5/10 + MRR on toolbench and metatool (every 7th query), and an
 * offline linear fusion with the lexical ranker (weight chosen on even-position queries, reported on odd).
 * Usage: node --import tsx bench/semantic.ts [--tools N] [--metatool-every K] [--quality-only]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { DEFAULTS } from "../src/config/defaults.ts";
import { openDatabase } from "../src/database/sqlite.ts";
import { discoveryMigrations, ToolCatalog } from "../src/discovery/index.ts";
import {
  CosineScan,
  Embedder,
  SemanticToolSearch,
  semanticMigrations,
  TextVectors,
  toolEmbeddingText,
} from "../src/semantic/index.ts";
import { semanticScoreOf } from "../src/semantic/tool-search.ts";
import { clipQuery, growCatalog, openCatalog, type Query, readQueries, table } from "./lib/discovery-data.ts";

/** The shipped model unless WAYFIND_MODEL_DIR names another folder of the same layout. */
const MODEL_DIR = process.env.WAYFIND_MODEL_DIR ?? DEFAULTS.toolSearch.semantic.modelDir;
const WEIGHTS = [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6];

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function latencies(samples: number[]): { p50: number; p95: number; p99: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) };
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
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
  const { p50, p95, p99 } = latencies(samples);
  return [measure, ms(p50), ms(p95), ms(p99), note];
}

async function speed(embedder: Embedder, queries: readonly string[], toolCount: number): Promise<void> {
  const rows: string[][] = [["measure", "p50", "p95", "p99", "note"]];
  const embed = (q: string) => embedder.embedQuery(q);
  rows.push(
    await timedRow(
      "query embedding, cold",
      `${queries.length} distinct queries, one at a time`,
      queries,
      embed,
    ),
  );
  rows.push(await timedRow("query embedding, cached", "the same queries again (LRU)", queries, embed));

  // A catalog of `toolCount` tools whose vectors the server's semantic search (SemanticToolSearch)
  // computes in the worker while a 10 ms timer on the main thread notes how late it fires.
  const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-semantic-"));
  const db = openDatabase(join(dir, "wayfind.db"), [...discoveryMigrations, ...semanticMigrations]);
  const semantic = new SemanticToolSearch({ db, embedder, weight: DEFAULTS.toolSearch.semantic.weight });
  const catalog = new ToolCatalog(db, { onIndexBuilt: (index) => semantic.indexBuilt(index) });
  await catalog.register("grown", growCatalog(toolCount));
  await catalog.indexReady();
  // The machine's own stalls (other processes on shared cores), measured first with nothing running.
  const idle = monitorEventLoopDelay({ resolution: 5 });
  idle.enable();
  await new Promise((done) => setTimeout(done, 5_000));
  idle.disable();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  let lastTick = performance.now();
  let worstTimerLateness = 0;
  let stalls = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    const late = now - lastTick - 10;
    worstTimerLateness = Math.max(worstTimerLateness, late);
    if (late > 50) stalls++;
    lastTick = now;
  }, 10);
  loop.enable();
  const t0 = performance.now();
  await semantic.settled();
  const seconds = (performance.now() - t0) / 1000;
  const tools = [...catalog.all()];
  loop.disable();
  clearInterval(probe);
  rows.push([
    `embedding ${tools.length} tool texts`,
    `${(tools.length / seconds).toFixed(0)} texts/s`,
    "",
    "",
    `${seconds.toFixed(1)} s in batches of 16, persisted; main loop delay: max ${(loop.max / 1e6).toFixed(1)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, ${stalls} timer ticks over 50 ms late (idle, 5 s before: max ${(idle.max / 1e6).toFixed(1)} ms, p99 ${(idle.percentile(99) / 1e6).toFixed(1)} ms) (timer probe ${worstTimerLateness.toFixed(1)} ms late at worst)`,
  ]);

  // SearchTools' in-process path (what a gRPC call adds is in bench/grpc-10k.ts): lexical, then
  // semantic with the query embedded first (cold) and from the LRU (cached).
  const lexical = (q: string) => catalog.search({ query: q, limit: 8 });
  const fused = async (q: string) =>
    catalog.search({ query: q, limit: 8, semantic: await semantic.forQuery(q) });
  rows.push(await timedRow(`SearchTools, lexical, ${tools.length} tools`, "limit 8", queries, lexical));
  const fresh = queries.map((q) => `${q} (again)`);
  rows.push(
    await timedRow(
      `SearchTools, semantic, ${tools.length} tools`,
      "query not embedded before (cold)",
      fresh,
      fused,
    ),
  );
  rows.push(
    await timedRow(
      `SearchTools, semantic, ${tools.length} tools`,
      "the same queries again (cached)",
      fresh,
      fused,
    ),
  );
  // The same vectors, read back for the scan rows (nothing is embedded again).
  const vectors = new TextVectors(db, embedder);
  await vectors.sync(tools.map((t) => ({ owner: t.owner, name: t.name, hash: t.hash, text: "" })));
  const packed = vectors.pack();
  const queryVectors = await Promise.all(queries.map((q) => embedder.embedQuery(q)));
  const scanned = `cosine scan, ${packed.keys.length} vectors`;
  const rounds = [...queryVectors, ...queryVectors, ...queryVectors, ...queryVectors, ...queryVectors];
  rows.push(await timedRow(scanned, "top 20, no mask", rounds, (q) => packed.scan.top(q, 20)));
  const halfMask = Uint8Array.from({ length: packed.keys.length }, (_, i) => i % 2);
  rows.push(
    await timedRow(scanned, "top 20, half masked out", rounds, (q) => packed.scan.top(q, 20, halfMask)),
  );
  global.gc?.();
  rows.push([
    "RSS",
    mb(process.memoryUsage().rss),
    "",
    "",
    `model loaded in the worker + ${packed.keys.length} vectors`,
  ]);
  console.log(table(rows));
  db.close();
  rmSync(dir, { recursive: true, force: true });
}

interface Ranked {
  readonly names: readonly string[];
}

interface Metrics {
  r1: number;
  r5: number;
  r10: number;
  mrr: number;
}

function score(runs: readonly { ranked: Ranked; gold: ReadonlySet<string> }[]): Metrics {
  const m = { r1: 0, r5: 0, r10: 0, mrr: 0 };
  for (const { ranked, gold } of runs) {
    const recall = (k: number) => ranked.names.slice(0, k).filter((n) => gold.has(n)).length / gold.size;
    m.r1 += recall(1);
    m.r5 += recall(5);
    m.r10 += recall(10);
    const first = ranked.names.findIndex((n) => gold.has(n));
    m.mrr += first >= 0 ? 1 / (first + 1) : 0;
  }
  const n = Math.max(1, runs.length);
  return { r1: m.r1 / n, r5: m.r5 / n, r10: m.r10 / n, mrr: m.mrr / n };
}

/** Every tool of the catalog as registered (names the lexical search returns). */
function listTools(catalog: ToolCatalog): { name: string; description: string }[] {
  const out: { name: string; description: string }[] = [];
  let pageToken = "";
  do {
    const page = catalog.list({ pageSize: 500, pageToken });
    out.push(...page.tools.map((t) => ({ name: t.name, description: t.description })));
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return out;
}

interface QueryRun {
  readonly gold: ReadonlySet<string>;
  readonly semantic: readonly { name: string; score: number }[];
  readonly lexical: ReadonlyMap<string, number>;
  /** Cosine of the query to any tool (for lexical hits outside the semantic top 20). */
  readonly cosineOf: (name: string) => number;
}

interface Fusion {
  /** The lexical share. */
  readonly weight: number;
  /** Cosine min-max scaled over the union of both top-20 lists, or mapped as the server does (semanticScoreOf). */
  readonly scaled: boolean;
  /** Added to the lexical share per unit of the query's best lexical score. */
  readonly slope: number;
}

const FUSIONS: Fusion[] = [
  ...WEIGHTS.flatMap((weight) => [
    { weight, scaled: false, slope: 0 },
    { weight, scaled: true, slope: 0 },
  ]),
  // Adaptive: the lexical share grows with the best lexical score (the words matched rare terms well).
  ...[0.2, 0.3, 0.4].flatMap((weight) =>
    [0.2, 0.3, 0.4, 0.5].map((slope) => ({ weight, scaled: false, slope })),
  ),
];
const fusionName = (f: Fusion) =>
  `w=${f.weight}${f.slope > 0 ? ` + ${f.slope} × best lexical` : ""}${f.scaled ? ", cosine min-max" : ", as served"}`;

function lexicalOnly(run: QueryRun): Ranked {
  return { names: [...run.lexical.keys()] };
}

function fuse(run: QueryRun, { weight: base, scaled, slope }: Fusion): Ranked {
  const weight = Math.min(1, base + slope * Math.max(0, ...run.lexical.values()));
  const names = [...new Set([...run.semantic.map((h) => h.name), ...run.lexical.keys()])];
  const cosines = names.map((name) => run.cosineOf(name));
  const low = scaled ? Math.min(...cosines) : 0;
  const range = scaled ? Math.max(...cosines) - low || 1 : 1;
  const scored = names.map((name, i) => ({
    name,
    score:
      weight * (run.lexical.get(name) ?? 0) +
      (1 - weight) *
        (scaled ? ((cosines[i] as number) - low) / range : semanticScoreOf(cosines[i] as number)),
  }));
  scored.sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : 1));
  return { names: scored.map((s) => s.name) };
}

async function quality(embedder: Embedder, metatoolEvery: number): Promise<void> {
  const rows: (string | number)[][] = [["set", "ranker", "queries", "R@1", "R@5", "R@10", "MRR"]];
  const fusionRuns: { set: string; even: QueryRun[]; odd: QueryRun[] }[] = [];
  for (const set of ["toolbench", "metatool"]) {
    const { catalog, close, aliasOf } = await openCatalog([`${set}_catalog.jsonl`]);
    const tools = listTools(catalog);
    const t0 = performance.now();
    const vectors = await embedder.embedTexts(tools.map((t) => toolEmbeddingText(t.name, t.description)));
    const packed = new Float32Array(tools.length * embedder.dims);
    vectors.forEach((v, i) => {
      packed.set(v, i * embedder.dims);
    });
    const scan = new CosineScan(packed, embedder.dims);
    const indexOf = new Map(tools.map((t, i) => [t.name, i]));
    let queries: Query[] = readQueries(`${set}_queries.jsonl`);
    const total = queries.length;
    if (set === "metatool") queries = queries.filter((_, i) => i % metatoolEvery === 0);
    const runs: QueryRun[] = [];
    for (const q of queries) {
      const text = clipQuery(q.query);
      const query = await embedder.embedQuery(text);
      const cosines = Float32Array.from(scan.scores(query));
      const cosineOf = (name: string): number => cosines[indexOf.get(name) ?? -1] ?? 0;
      const semantic = scan.top(query, 20).map((h) => ({ name: tools[h.doc]?.name ?? "", score: h.score }));
      const lexical = new Map(catalog.search({ query: text, limit: 20 }).tools.map((t) => [t.name, t.score]));
      runs.push({ gold: new Set(q.gold.map((g) => aliasOf.get(g) ?? g)), semantic, lexical, cosineOf });
    }
    console.error(
      `${set}: ${tools.length} tools, ${runs.length} queries in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const label = runs.length === total ? `${total}` : `${runs.length} of ${total}`;
    const sem = score(runs.map((r) => ({ ranked: { names: r.semantic.map((h) => h.name) }, gold: r.gold })));
    const lex = score(runs.map((r) => ({ ranked: lexicalOnly(r), gold: r.gold })));
    rows.push([set, "lexical (wayfind)", label, lex.r1, lex.r5, lex.r10, lex.mrr]);
    rows.push([set, "semantic only", label, sem.r1, sem.r5, sem.r10, sem.mrr]);
    fusionRuns.push({
      set,
      even: runs.filter((_, i) => i % 2 === 0),
      odd: runs.filter((_, i) => i % 2 === 1),
    });
    close();
  }
  // The fusion with the best mean R@5 over both sets' even-position queries among those that keep every
  // set at or above lexical-only there (issue 14: no public set below lexical), reported on the odd ones.
  const evenR5 = (f: Fusion | undefined, set: (typeof fusionRuns)[number]) =>
    score(set.even.map((r) => ({ ranked: f === undefined ? lexicalOnly(r) : fuse(r, f), gold: r.gold }))).r5;
  const meanEvenR5 = (f: Fusion) => fusionRuns.reduce((sum, s) => sum + evenR5(f, s), 0);
  const safe = FUSIONS.filter((f) => fusionRuns.every((s) => evenR5(f, s) >= evenR5(undefined, s)));
  const chosen = (safe.length > 0 ? safe : FUSIONS).reduce((best, f) =>
    meanEvenR5(f) > meanEvenR5(best) ? f : best,
  );
  for (const s of fusionRuns) {
    const lexOdd = score(s.odd.map((r) => ({ ranked: lexicalOnly(r), gold: r.gold })));
    const semOdd = score(
      s.odd.map((r) => ({ ranked: { names: r.semantic.map((h) => h.name) }, gold: r.gold })),
    );
    const fusedOdd = score(s.odd.map((r) => ({ ranked: fuse(r, chosen), gold: r.gold })));
    const n = `${s.odd.length} odd`;
    rows.push([s.set, "lexical, odd half", n, lexOdd.r1, lexOdd.r5, lexOdd.r10, lexOdd.mrr]);
    rows.push([s.set, "semantic, odd half", n, semOdd.r1, semOdd.r5, semOdd.r10, semOdd.mrr]);
    rows.push([
      s.set,
      `fused ${fusionName(chosen)}, odd half`,
      n,
      fusedOdd.r1,
      fusedOdd.r5,
      fusedOdd.r10,
      fusedOdd.mrr,
    ]);
  }
  console.log(table(rows));
  console.log(
    `\nfused = w × lexical score (wayfind's, per response) + (1 − w) × cosine (raw, or min-max over both lists); w from ${WEIGHTS.join(", ")} and the cosine form chosen on even-position queries (mean R@5), reported on odd ones`,
  );
  console.log(
    `  lexical: even R@5 ${fusionRuns.map((s) => `${s.set} ${evenR5(undefined, s).toFixed(3)}`).join(", ")}`,
  );
  for (const f of FUSIONS)
    console.log(
      `  ${fusionName(f)}: even R@5 ${fusionRuns.map((s) => `${s.set} ${evenR5(f, s).toFixed(3)}`).join(", ")}`,
    );
}

async function main(): Promise<void> {
  const started = performance.now();
  const embedder = await Embedder.open(MODEL_DIR);
  console.log(
    `model ${embedder.modelId}, ${embedder.dims} dimensions, RSS after loading ${mb(process.memoryUsage().rss)}`,
  );
  const queries = readQueries("toolbench_queries.jsonl")
    .slice(0, 200)
    .map((q) => clipQuery(q.query));
  if (!process.argv.includes("--quality-only")) await speed(embedder, queries, option("--tools", 10_000));
  await quality(embedder, option("--metatool-every", 7));
  await embedder.close();
  console.log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
