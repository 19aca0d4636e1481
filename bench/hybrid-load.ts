/**
 * Hybrid search under many callers, side by side with words only, the way users run it: `wayfind
 * serve` child processes (`node bin/wayfind.js serve`, no flags) over a 10,000-tool catalog grown from
 * the public sets, loaded over native gRPC by ghz (the load client shares the machine's cores).
 *   1. 32 callers (4 connections × 8 streams), repeated requests (50 ToolBench requests, each seen
 *      before): throughput and latency, words only and hybrid.
 *   2. 32 callers sending 2,000 requests never seen (MetaTool), with a trivial RPC
 *      (grpc.health.v1.Health/Check at 20 calls/s) in the same run: both p50/p99 and the ratio of the
 *      p99s; hybrid after every vector is ready and while the catalog is still being embedded (a new
 *      data dir), words only for reference.
 *   3. Requests never seen: 32 callers against one after another (other requests each time).
 *   4. One caller, repeated requests: the latency hybrid adds to words.
 *   5. How meaning took part in each run (the server's wayfind_search_semantic_total by tier: the
 *      model, its static tier, none; wayfind_search_texts_late_total), each server's RSS, and how long a server took
 *      to listen and to have every tool's vector (a new data dir, and again on restart).
 * Usage: node --import tsx bench/hybrid-load.ts [--tools N] [--duration S]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { clipQuery, growCatalog, readQueries, writeCatalogFiles } from "./lib/discovery-data.ts";
import {
  ensureGhz,
  type LoadResult,
  type LoadSpec,
  prepareWayfind,
  printAligned,
  runGhz,
  type ServerProcess,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";

const { values: flags } = parseArgs({
  options: {
    tools: { type: "string", default: "10000" },
    duration: { type: "string", default: "8" },
  },
  strict: true,
});
const TOOLS = Number(flags.tools);
const DURATION_S = Number(flags.duration);
const TENANT = "bench";
const CALLERS = { connections: 4, streams: 8 } as const;

const work = mkdtempSync(join(tmpdir(), "wayfind-hybrid-load-"));
const ghz = await ensureGhz();
await prepareWayfind(process.cwd());

const catalogs = writeCatalogFiles(work, growCatalog(TOOLS));
writeFileSync(join(work, "hybrid.yaml"), catalogs);
writeFileSync(join(work, "words.yaml"), `${catalogs}tool_search: {semantic: {enabled: false}}\n`);

const repeated = readQueries("toolbench_queries.jsonl")
  .slice(0, 50)
  .map((q) => clipQuery(q.query));
// MetaTool's requests, each used once in the whole run: every slice below is new to every server.
const fresh = [...new Set(readQueries("metatool_queries.jsonl").map((q) => clipQuery(q.query)))];
let taken = 0;
const neverSeen = (count: number): string[] => {
  const slice = fresh.slice(taken, taken + count);
  taken += count;
  if (slice.length < count) throw new Error("bench: not enough distinct MetaTool requests");
  return slice;
};

let dataFiles = 0;
function searchSpec(queries: readonly string[], shape: { connections: number; streams: number }): LoadSpec {
  const file = join(work, `data-${dataFiles++}.json`);
  writeFileSync(file, JSON.stringify(queries.map((query) => ({ caller: { tenant_id: TENANT }, query }))));
  return {
    proto: "wayfind/v1/tools.proto",
    call: "wayfind.v1.ToolDiscoveryService/SearchTools",
    data: {},
    dataFile: file,
    ...shape,
    durationS: DURATION_S,
  };
}

const HEALTH: LoadSpec = {
  proto: "grpc/health/v1/health.proto",
  call: "grpc.health.v1.Health/Check",
  data: {},
  connections: 1,
  streams: 1,
  durationS: DURATION_S,
  rps: 20,
};

const starts: string[][] = [];

/** A server, and how long it took to listen (noted in the start-up table with `label`). */
async function start(label: string, config: string, dataDir: string): Promise<ServerProcess> {
  process.stderr.write(`· starting wayfind (${label})\n`);
  const t0 = performance.now();
  const server = await spawnServer(wayfindServeArgs(join(work, config), join(work, dataDir)), {
    logFile: join(work, `${label.replace(/\W+/g, "-")}.log`),
  });
  starts.push([label, ((performance.now() - t0) / 1000).toFixed(1), ""]);
  return server;
}

/** Notes in the start-up table when the server's vectors were all ready, counted from `t0`. */
async function readyAfter(server: ServerProcess, t0: number): Promise<void> {
  await vectorsReady(server);
  const row = starts.at(-1);
  if (row) row[2] = ((performance.now() - t0) / 1000).toFixed(1);
}

async function readiness(server: ServerProcess): Promise<string> {
  const answer = (await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).json()) as {
    checks: { semantic?: string };
  };
  return answer.checks.semantic ?? "off";
}

async function vectorsReady(server: ServerProcess): Promise<void> {
  while ((await readiness(server)) === "partial") await new Promise((done) => setTimeout(done, 1_000));
}

/** The server's counters of how meaning took part: searches by tier (model, static, none), texts late. */
async function meaningCounters(server: ServerProcess): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
  const counters = new Map<string, number>();
  for (const line of text.split("\n")) {
    const tier = /^wayfind_search_semantic_total\{kind="tool",status="\w+",tier="(\w+)"\} (\S+)/.exec(line);
    if (tier) counters.set(tier[1] as string, (counters.get(tier[1] as string) ?? 0) + Number(tier[2]));
    const late = /^wayfind_search_texts_late_total\{kind="tool"\} (\S+)/.exec(line);
    if (late) counters.set("texts late", Number(late[1]));
  }
  return counters;
}

/**
 * What a run did to the counters: the share of searches each tier read — "model 31 %, static 69 %"
 * (the model read the request; its static tier did, the model not being in time; none: words only).
 */
async function meaningDuring<T>(server: ServerProcess, run: () => Promise<T>): Promise<[T, string]> {
  const before = await meaningCounters(server);
  const result = await run();
  // Search events are counted once written (in batches, within a second).
  await new Promise((done) => setTimeout(done, 1_500));
  const after = await meaningCounters(server);
  const delta = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
  const total = delta("model") + delta("static") + delta("none");
  if (total === 0) return [result, "off"];
  const parts = ["model", "static", "none"]
    .filter((k) => delta(k) > 0)
    .map((k) => `${k === "none" ? "words" : k} ${((100 * delta(k)) / total).toFixed(0)} %`);
  const late = delta("texts late");
  return [result, `${parts.join(", ")}${late > 0 ? ` (${late} texts late)` : ""}`];
}

const ms = (x: number) => x.toFixed(1);
const rows: string[][] = [];
const row = (what: string, server: string, r: LoadResult, meaning: string, note = "") =>
  rows.push([
    what,
    server,
    r.rps.toFixed(0),
    ms(r.p50Ms),
    ms(r.p99Ms),
    r.errors > 0 ? `${r.errors} (${r.errorSummary})` : "0",
    meaning,
    note,
  ]);

/** SearchTools under `spec` with the trivial RPC in the same run; the note holds both p99s' ratio. */
async function withTrivial(server: ServerProcess, spec: LoadSpec): Promise<[LoadResult, LoadResult, string]> {
  const [[search, health], meaning] = await meaningDuring(server, () =>
    Promise.all([runGhz(ghz, server.port, spec), runGhz(ghz, server.port, { ...HEALTH, durationS: 4 })]),
  );
  return [search, health, meaning];
}

const rss: string[][] = [];
const noteRss = (label: string, server: ServerProcess) => {
  const { nowMiB, peakMiB } = server.rss();
  rss.push([label, nowMiB.toFixed(0), peakMiB.toFixed(0)]);
};

try {
  // Words only.
  const words = await start("words only", "words.yaml", "data-words");
  await runGhz(ghz, words.port, { ...searchSpec(repeated, CALLERS), durationS: 2 });
  const [wordsOne, wordsOneMeaning] = await meaningDuring(words, () =>
    runGhz(ghz, words.port, searchSpec(repeated, { connections: 1, streams: 1 })),
  );
  row("one caller, repeated requests", "words only", wordsOne, wordsOneMeaning);
  const [wordsRepeated, wordsMeaning] = await meaningDuring(words, () =>
    runGhz(ghz, words.port, searchSpec(repeated, CALLERS)),
  );
  row("32 callers, repeated requests", "words only", wordsRepeated, wordsMeaning);
  {
    const [search, health, meaning] = await withTrivial(words, {
      ...searchSpec(neverSeen(2_000), CALLERS),
      total: 2_000,
    });
    row(
      "32 callers, 2,000 requests",
      "words only",
      search,
      meaning,
      `Health/Check p99 ${ms(health.p99Ms)} ms`,
    );
  }
  noteRss("words only", words);
  await words.stop();

  // Hybrid, while the catalog is being embedded: a fresh data dir, loaded as soon as it listens.
  const embeddingStarted = performance.now();
  const embedding = await start(
    "hybrid, new data dir (embedding under load)",
    "hybrid.yaml",
    "data-embedding",
  );
  {
    const [search, health, meaning] = await withTrivial(embedding, {
      ...searchSpec(neverSeen(2_000), CALLERS),
      total: 2_000,
    });
    const still = await readiness(embedding);
    row(
      "32 callers, 2,000 requests, while embedding",
      "hybrid",
      search,
      meaning,
      `Health/Check p99 ${ms(health.p99Ms)} ms: ${(search.p99Ms / health.p99Ms).toFixed(1)}× (vectors ${still} after)`,
    );
  }
  await readyAfter(embedding, embeddingStarted);
  noteRss("hybrid, embedded while loaded", embedding);
  await embedding.stop();

  // The same catalog embedded with nothing else running, for the start-up table.
  const quietStarted = performance.now();
  const quiet = await start("hybrid, new data dir (no load)", "hybrid.yaml", "data-quiet");
  await readyAfter(quiet, quietStarted);
  noteRss("hybrid, embedded with no load", quiet);
  await quiet.stop();

  // Hybrid, vectors ready (a restart on the data dir made above: nothing is embedded again).
  const restarted = performance.now();
  const hybrid = await start("hybrid, restart (stored vectors)", "hybrid.yaml", "data-embedding");
  await readyAfter(hybrid, restarted);
  // Each repeated request once, so the runs below find them cached as a serving fleet would.
  await runGhz(ghz, hybrid.port, { ...searchSpec(repeated, { connections: 1, streams: 1 }), total: 50 });
  await runGhz(ghz, hybrid.port, { ...searchSpec(repeated, CALLERS), durationS: 2 });
  const [hybridOne, hybridOneMeaning] = await meaningDuring(hybrid, () =>
    runGhz(ghz, hybrid.port, searchSpec(repeated, { connections: 1, streams: 1 })),
  );
  row(
    "one caller, repeated requests",
    "hybrid",
    hybridOne,
    hybridOneMeaning,
    `p50 ${(hybridOne.p50Ms - wordsOne.p50Ms).toFixed(2)} ms over words only`,
  );
  const [hybridRepeated, hybridMeaning] = await meaningDuring(hybrid, () =>
    runGhz(ghz, hybrid.port, searchSpec(repeated, CALLERS)),
  );
  row(
    "32 callers, repeated requests",
    "hybrid",
    hybridRepeated,
    hybridMeaning,
    `${((100 * hybridRepeated.rps) / wordsRepeated.rps).toFixed(0)} % of words only`,
  );
  {
    const [search, health, meaning] = await withTrivial(hybrid, {
      ...searchSpec(neverSeen(2_000), CALLERS),
      total: 2_000,
    });
    row(
      "32 callers, 2,000 requests, vectors ready",
      "hybrid",
      search,
      meaning,
      `Health/Check p99 ${ms(health.p99Ms)} ms: ${(search.p99Ms / health.p99Ms).toFixed(1)}×`,
    );
  }
  {
    const [oneByOne, oneMeaning] = await meaningDuring(hybrid, () =>
      runGhz(ghz, hybrid.port, { ...searchSpec(neverSeen(150), { connections: 1, streams: 1 }), total: 150 }),
    );
    row("requests never seen, one after another", "hybrid", oneByOne, oneMeaning);
    const [many, manyMeaning] = await meaningDuring(hybrid, () =>
      runGhz(ghz, hybrid.port, { ...searchSpec(neverSeen(1_200), CALLERS), total: 1_200 }),
    );
    row(
      "requests never seen, 32 callers",
      "hybrid",
      many,
      manyMeaning,
      `${(many.rps / oneByOne.rps).toFixed(1)}× one after another`,
    );
  }
  noteRss("hybrid, vectors ready", hybrid);
  await hybrid.stop();
} finally {
  rmSync(work, { recursive: true, force: true });
}

console.log(
  `\nSearchTools over native gRPC, ${TOOLS} tools (\`node bin/wayfind.js serve\`, ghz on the same machine)\n`,
);
printAligned(
  ["run", "server", "calls/s", "p50 ms", "p99 ms", "errors", "searches read by", "note"],
  rows,
  new Set([2, 3, 4]),
);
console.log("\nStart (seconds from spawn)\n");
printAligned(["server", "listening", "every vector ready"], starts, new Set([1, 2]));
console.log("\nResident memory (MB)\n");
printAligned(["server", "RSS after the runs", "peak"], rss, new Set([1, 2]));
