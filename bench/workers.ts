/**
 * `wayfind serve --workers N` (issue 47): one port served by N processes, each a replica of one
 * PostgreSQL. SearchTools and RecordUsage throughput with 1 and 2 workers (and whatever else
 * --workers lists), the server's CPU (primary and workers together, in cores) and each worker's
 * resident memory after the runs.
 *
 * The load comes from ghz on the same machine (bench/setup.sh installs it); --ghz-cores N caps it at
 * N of Go's threads (GOMAXPROCS), so it takes at most that many cores — on a 2-core machine the
 * workers, PostgreSQL and ghz still share the two, and the figures say how many the server used.
 *
 * Usage: node --import tsx bench/workers.ts [--seconds S] [--workers 1,2] [--ghz-cores N]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { startPostgres, type TestPostgres } from "../test/support/postgres.ts";
import { WORKLOADS, type Workload } from "./lib/fleet-workloads.ts";
import {
  ensureGhz,
  prepareWayfind,
  printAligned,
  ROOT,
  readCpuMs,
  readRss,
  runGhz,
  type ServerProcess,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    workers: { type: "string", default: "1,2" },
    "ghz-cores": { type: "string" },
  },
});
const SECONDS = Number(values.seconds);
const COUNTS = values.workers.split(",").map(Number);
const GHZ_CORES = values["ghz-cores"] === undefined ? undefined : Number(values["ghz-cores"]);
/** Calls in flight over 4 connections, which the primary hands to the workers in turn. */
const CONNECTIONS = 4;
const IN_FLIGHT = 24;
const CONFIG = join(ROOT, "demo", "wayfind.yaml");
const MEASURED = WORKLOADS.filter((workload) => /^(SearchTools|RecordUsage)/.test(workload.label));

/** The primary's worker processes (Linux: its children); none for a single process. */
function childrenOf(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  return text === "" ? [] : text.split(/\s+/).map(Number);
}

/** Waits until the primary says every worker listens (its "listening" line names the count). */
async function allListening(logFile: string, count: number): Promise<void> {
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; await sleep(100))
    if (readFileSync(logFile, "utf8").includes(`"workers":${count},`)) return;
  throw new Error(`the ${count} workers did not all listen within 90 s (see ${logFile})`);
}

const fmt = (n: number, digits = 1) => n.toLocaleString("en-US", { maximumFractionDigits: digits });

let rounds = 0;
/** One ghz run of `workload` against the port, with the CPU every server process spent meanwhile. */
async function measure(ghz: string, server: ServerProcess, pids: readonly number[], workload: Workload) {
  const cpu = () => pids.reduce((sum, pid) => sum + readCpuMs(pid), 0);
  const before = cpu();
  const started = performance.now();
  const result = await runGhz(ghz, server.port, {
    proto: workload.proto,
    call: workload.call,
    data: workload.data(`w${rounds++}`),
    connections: CONNECTIONS,
    streams: IN_FLIGHT / CONNECTIONS,
    durationS: SECONDS,
    ...(GHZ_CORES === undefined ? {} : { cpus: Array.from({ length: GHZ_CORES }, (_, i) => i).join(",") }),
  });
  return { result, cores: (cpu() - before) / (performance.now() - started) };
}

const scratch = mkdtempSync(join(tmpdir(), "wayfind-bench-workers-"));
let postgres: TestPostgres | undefined;
let server: ServerProcess | undefined;
try {
  await prepareWayfind(ROOT);
  const ghz = await ensureGhz();
  postgres = await startPostgres();
  console.log(
    `workers bench: ${SECONDS} s per run, ${IN_FLIGHT} calls in flight over ${CONNECTIONS} connections, ` +
      `${availableParallelism()} cores, ghz ${GHZ_CORES === undefined ? "unpinned" : `on ${GHZ_CORES} core(s)`}, PostgreSQL from ${postgres.binaries}\n`,
  );
  const rows: string[][] = [];
  const memory: string[][] = [];
  const base = new Map<string, number>();
  for (const count of COUNTS) {
    const logFile = join(scratch, `serve-${count}.log`);
    server = await spawnServer(
      [...wayfindServeArgs(CONFIG, mkdtempSync(join(scratch, "data-"))), "--workers", String(count)],
      { logFile, env: { WAYFIND_DATABASE_URL: postgres.url } },
    );
    if (count > 1) await allListening(logFile, count);
    const workers = childrenOf(server.pid);
    const pids = [server.pid, ...workers];
    for (const workload of MEASURED) {
      const { result, cores } = await measure(ghz, server, pids, workload);
      if (!base.has(workload.label)) base.set(workload.label, result.rps);
      rows.push([
        workload.label,
        String(count),
        fmt(result.rps, 0),
        `${fmt(result.rps / (base.get(workload.label) ?? result.rps), 2)}×`,
        fmt(result.p50Ms, 2),
        fmt(result.p99Ms, 2),
        fmt(cores, 2),
        String(result.errors),
      ]);
    }
    const processes =
      count > 1
        ? [["primary", server.pid], ...workers.map((pid, i) => [`worker ${i + 1}`, pid])]
        : [["server", server.pid]];
    for (const [role, pid] of processes as [string, number][]) {
      const rss = readRss(pid);
      memory.push([String(count), role, fmt(rss.nowMiB, 0), fmt(rss.peakMiB, 0)]);
    }
    await server.stop();
    server = undefined;
  }
  printAligned(
    ["call", "workers", "req/s", "vs first", "p50 ms", "p99 ms", "server cores", "errors"],
    rows,
    new Set([1, 2, 3, 4, 5, 6, 7]),
  );
  console.log("\nResident memory after the runs (MiB)");
  printAligned(["workers", "process", "RSS now", "RSS peak"], memory, new Set([0, 2, 3]));
} finally {
  await server?.stop();
  await postgres?.stop();
  rmSync(scratch, { recursive: true, force: true });
}
