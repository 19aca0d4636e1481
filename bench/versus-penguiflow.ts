/**
 * One caller, in process, side by side on the same machine: penguiflow 3.11.2's tool search
 * (planner.tool_search_cache: SQLite FTS5, words only; Python) and wayfind's, words only and hybrid
 * (the default: words fused with meaning), over the public catalogs at three sizes — MetaTool (199
 * tools), the MCP catalogs (808) and ToolBench (2,479) — with each set's own requests. wayfind's hybrid
 * rows: requests seen before (their meaning cached, as an agent's repeated requests are) and never seen
 * (each embedded as it is asked). penguiflow is installed from PyPI into .tools/penguiflow on first use.
 * Usage: node --import tsx bench/versus-penguiflow.ts [--requests N]
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { Embedder } from "../src/semantic/index.ts";
import { clipQuery, DATA_DIR, readQueries, table } from "./lib/discovery-data.ts";
import { ROOT } from "./lib/grpc-bench-support.ts";
import { BENCH_MODEL_DIR, openHybrid } from "./lib/hybrid.ts";
import { pythonTool } from "./lib/python-tool.ts";
import { percentile } from "./lib/stats.ts";

const run = promisify(execFile);
const { values: flags } = parseArgs({
  options: { requests: { type: "string", default: "300" } },
  strict: true,
});
const REQUESTS = Number(flags.requests);
const PENGUIFLOW = "penguiflow==3.11.2";

interface Timing {
  readonly p50: number;
  readonly p99: number;
}

async function timed(requests: readonly string[], search: (q: string) => unknown): Promise<Timing> {
  const samples: number[] = [];
  for (const q of requests) {
    const t0 = performance.now();
    await search(q);
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const SETS = [
  { label: "MetaTool", files: ["metatool_catalog.jsonl"], requests: "metatool_queries.jsonl" },
  {
    label: "MCP",
    files: ["mcp_catalog.jsonl", "livemcpbench_catalog.jsonl"],
    requests: "mcp_requests.jsonl",
  },
  { label: "ToolBench", files: ["toolbench_catalog.jsonl"], requests: "toolbench_queries.jsonl" },
] as const;

const python = join(await pythonTool("penguiflow", PENGUIFLOW), "bin/python");
const embedder = await Embedder.open(BENCH_MODEL_DIR);
const work = mkdtempSync(join(tmpdir(), "wayfind-versus-penguiflow-"));
const ms = (t: Timing) => `${t.p50.toFixed(2)} / ${t.p99.toFixed(2)}`;
const rows: string[][] = [
  [
    "catalog",
    "tools",
    "penguiflow p50 / p99 ms",
    "wayfind words p50 / p99",
    "wayfind hybrid, seen",
    "hybrid, never seen",
    "hybrid seen − words (p50)",
  ],
];
try {
  for (const set of SETS) {
    const requests = [...new Set(readQueries(set.requests).map((q) => clipQuery(q.query)))].slice(
      0,
      REQUESTS,
    );
    const catalog = join(work, `${set.label}.jsonl`);
    writeFileSync(catalog, set.files.map((f) => readFileSync(join(DATA_DIR, f), "utf8").trim()).join("\n"));
    const requestFile = join(work, `${set.label}.json`);
    writeFileSync(requestFile, JSON.stringify(requests));
    const { stdout } = await run(python, [
      join(ROOT, "bench/lib/penguiflow_search.py"),
      catalog,
      requestFile,
    ]);
    const penguiflow = JSON.parse(stdout) as { tools: number; p50_ms: number; p99_ms: number };

    const hybrid = await openHybrid(set.files, embedder);
    try {
      // Unmeasured rounds first, as penguiflow's driver does (JIT, caches of the words path).
      for (const q of requests) hybrid.lexical(q, 8);
      const words = await timed(requests, (q) => hybrid.lexical(q, 8));
      const neverSeen = await timed(requests, (q) => hybrid.hybrid(q, 8));
      const seen = await timed(requests, (q) => hybrid.hybrid(q, 8));
      rows.push([
        set.label,
        `${hybrid.registry.size}`,
        ms({ p50: penguiflow.p50_ms, p99: penguiflow.p99_ms }),
        ms(words),
        ms(seen),
        ms(neverSeen),
        `${(seen.p50 - words.p50).toFixed(2)} ms`,
      ]);
    } finally {
      await hybrid.close();
    }
  }
} finally {
  await embedder.close();
  rmSync(work, { recursive: true, force: true });
}
console.log(`\nOne caller, in process, ${REQUESTS} requests per set (limit 8)\n`);
console.log(table(rows));
