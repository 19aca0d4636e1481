/**
 * Hybrid search past 10,000 tools: a catalog of 100,000 (`--tools N`) grown from the public sets,
 * served by `node bin/wayfind.js serve` (no flags) and loaded over native gRPC by ghz. For words only
 * and hybrid: seconds to listening and (hybrid) to every tool's vector, on a new data dir and on a
 * restart from the stored vectors; RSS then and at its peak; SearchTools p50/p99 for one caller and for
 * 32 (4 connections × 8 streams) with 50 ToolBench requests seen before, and 32 callers with requests
 * never seen (how many were answered by meaning is counted from the server's metrics).
 * Usage: node --import tsx bench/hybrid-scale.ts [--tools N] [--duration S]
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
    tools: { type: "string", default: "100000" },
    duration: { type: "string", default: "8" },
  },
  strict: true,
});
const TOOLS = Number(flags.tools);
const DURATION_S = Number(flags.duration);

const work = mkdtempSync(join(tmpdir(), "wayfind-hybrid-scale-"));
const ghz = await ensureGhz();
await prepareWayfind(process.cwd());
const catalogs = writeCatalogFiles(work, growCatalog(TOOLS));
writeFileSync(join(work, "hybrid.yaml"), catalogs);
writeFileSync(join(work, "words.yaml"), `${catalogs}tool_search: {semantic: {enabled: false}}\n`);

const repeated = readQueries("toolbench_queries.jsonl")
  .slice(0, 50)
  .map((q) => clipQuery(q.query));
const fresh = [...new Set(readQueries("metatool_queries.jsonl").map((q) => clipQuery(q.query)))];
let files = 0;
function spec(queries: readonly string[], connections: number, streams: number): LoadSpec {
  const file = join(work, `data-${files++}.json`);
  writeFileSync(file, JSON.stringify(queries.map((query) => ({ caller: { tenant_id: "bench" }, query }))));
  return {
    proto: "wayfind/v1/tools.proto",
    call: "wayfind.v1.ToolDiscoveryService/SearchTools",
    data: {},
    dataFile: file,
    connections,
    streams,
    durationS: DURATION_S,
  };
}

async function semanticReadiness(server: ServerProcess): Promise<string> {
  const answer = (await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).json()) as {
    checks: { semantic?: string };
  };
  return answer.checks.semantic ?? "off";
}

/** Searches so far by the tier that read them (model, static, none), from the server's counters. */
async function searchesByTier(server: ServerProcess): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
  const counts: Record<string, number> = { model: 0, static: 0, none: 0 };
  for (const [, tier, count] of text.matchAll(
    /^wayfind_search_semantic_total\{kind="tool",status="\w+",tier="(\w+)"\} (\S+)/gm,
  ))
    counts[tier as string] = (counts[tier as string] ?? 0) + Number(count);
  return counts;
}

/** "model 12 %, static 88 %": the share of a run's searches each tier read. */
async function tierShares(
  server: ServerProcess,
  run: () => Promise<LoadResult>,
): Promise<[LoadResult, string]> {
  const before = await searchesByTier(server);
  const result = await run();
  // Search events are counted once written (in batches, within a second).
  await new Promise((done) => setTimeout(done, 1_500));
  const after = await searchesByTier(server);
  const delta = (tier: string) => (after[tier] ?? 0) - (before[tier] ?? 0);
  const total = delta("model") + delta("static") + delta("none");
  const shares = ["model", "static", "none"]
    .filter((tier) => delta(tier) > 0)
    .map((tier) => `${tier === "none" ? "words" : tier} ${((100 * delta(tier)) / total).toFixed(0)} %`);
  return [result, shares.join(", ")];
}

const starts: string[][] = [];
const loads: string[][] = [];
const ms = (x: number) => x.toFixed(1);
const load = (server: string, what: string, r: LoadResult, note = "") =>
  loads.push([server, what, r.rps.toFixed(0), ms(r.p50Ms), ms(r.p99Ms), `${r.errors}`, note]);

async function run(label: string, config: string, dataDir: string, measure: boolean): Promise<void> {
  process.stderr.write(`· starting wayfind (${label})\n`);
  const t0 = performance.now();
  const server = await spawnServer(wayfindServeArgs(join(work, config), join(work, dataDir)), {
    logFile: join(work, `${label.replace(/\W+/g, "-")}.log`),
  });
  const listening = (performance.now() - t0) / 1000;
  const rssListening = server.rss().nowMiB;
  while ((await semanticReadiness(server)) === "partial")
    await new Promise((done) => setTimeout(done, 1_000));
  const ready = (performance.now() - t0) / 1000;
  const { nowMiB, peakMiB } = server.rss();
  starts.push([
    label,
    listening.toFixed(1),
    ready.toFixed(1),
    rssListening.toFixed(0),
    nowMiB.toFixed(0),
    peakMiB.toFixed(0),
  ]);
  if (measure) {
    const server$ = label.split(",")[0] ?? label;
    await runGhz(ghz, server.port, { ...spec(repeated, 1, 1), total: 50 });
    const hybrid = label.startsWith("hybrid");
    const runs: [string, () => Promise<LoadResult>][] = [
      ["one caller, repeated requests", () => runGhz(ghz, server.port, spec(repeated, 1, 1))],
      ["32 callers, repeated requests", () => runGhz(ghz, server.port, spec(repeated, 4, 8))],
      [
        "32 callers, 1,000 requests never seen",
        () => runGhz(ghz, server.port, { ...spec(fresh.slice(0, 1_000), 4, 8), total: 1_000 }),
      ],
    ];
    for (const [what, go] of runs) {
      const [result, shares] = await tierShares(server, go);
      load(server$, what, result, hybrid ? shares : "");
    }
    const { nowMiB: after, peakMiB: peak } = server.rss();
    starts.push([`${label}: after the runs`, "", "", "", after.toFixed(0), peak.toFixed(0)]);
  }
  await server.stop();
}

try {
  await run("words only", "words.yaml", "data-words", true);
  await run("hybrid, new data dir", "hybrid.yaml", "data-hybrid", true);
  await run("hybrid, restart (stored vectors)", "hybrid.yaml", "data-hybrid", false);
} finally {
  rmSync(work, { recursive: true, force: true });
}

console.log(`\n${TOOLS} tools, \`node bin/wayfind.js serve\`\n`);
printAligned(
  ["server", "listening s", "every vector s", "RSS listening MB", "RSS MB", "peak MB"],
  starts,
  new Set([1, 2, 3, 4, 5]),
);
console.log("\nSearchTools over native gRPC (ghz on the same machine)\n");
printAligned(
  ["server", "run", "calls/s", "p50 ms", "p99 ms", "errors", "searches read by"],
  loads,
  new Set([2, 3, 4, 5]),
);
