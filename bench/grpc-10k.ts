/**
 * wayfind over native gRPC (h2c on loopback) with a 10,000-tool catalog (grown from the shared
 * catalogs, see growCatalog in lib/discovery-data.ts), measured with the ghz load client:
 *   - ToolDiscoveryService/SearchTools, 32 callers (4 connections × 8 streams), round-robin over the
 *     first 50 toolbench queries (realistic, 144–437 characters); target p99 < 3 ms;
 *   - ToolDiscoveryService/CheckToolCall (dispatch mode), the same tool: with valid arguments (checked,
 *     then activated for a new run per call, like ResolveTool) and with arguments its schema refuses
 *     (the repair answer, no write);
 *   - ToolDiscoveryService/ResolveTool, 32 sessions (one per ghz worker) activating a deferred tool,
 *     a new run per request, so every call is an activation (the write path); target p99 < 2 ms;
 *   - each RPC also with a single caller (1×1: the service time without queueing), and SearchTools
 *     once more after the ResolveTool runs filled the activation table;
 *   - server start time, spawn → "listening": empty config (node + wayfind boot, the floor), the 10k
 *     catalog on a fresh data dir (indexing) and again on the same data dir (restart);
 *   - server RSS after loading (target < 200 MB), after the load runs, and its peak.
 * The servers are child processes on 127.0.0.1 (`wayfind serve --config`, info log to a file).
 *
 * Usage: node --import tsx bench/grpc-10k.ts [--duration S] [--warmup S] [--rounds N] [--pin] [--cpu-prof]
 *   --duration S  measured seconds per run (default 5); --warmup S: unmeasured seconds first (2)
 *   --rounds N    measured runs per RPC, interleaved; the median (by req/s) is reported (default 3)
 *   --pin         server on CPU 1, ghz on CPU 0 (default: unpinned, they share the cores)
 *   --cpu-prof    profile the loaded server (node --cpu-prof) and print the hot spots of each RPC
 *                 (samples inside its measured runs only); the profile is kept
 *   --wayfind-root DIR  serve wayfind from another checkout (A/B of a change; needs its node_modules)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import type { ToolInput } from "../src/discovery/types.ts";
import { argumentChecker } from "../src/discovery/validate.ts";
import type { JsonObject } from "../src/json.ts";
import { mainThreadProfile, monotonicUs, summarizeProfile } from "./lib/cpu-profile.ts";
import { growCatalog, readQueries, writeCatalogFiles } from "./lib/discovery-data.ts";
import {
  ensureGhz,
  type LoadResult,
  type LoadSpec,
  loadFlagOptions,
  loadFlags,
  medianByRps,
  prepareWayfind,
  printAligned,
  probeStatus,
  ROOT,
  runGhz,
  type ServerProcess,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";

const { values: flags } = parseArgs({
  options: {
    ...loadFlagOptions(5, 2),
    "cpu-prof": { type: "boolean", default: false },
    "wayfind-root": { type: "string" },
  },
  strict: true,
});
const { durationS: DURATION_S, warmupS: WARMUP_S, rounds: ROUNDS, pin: PIN, cores } = loadFlags(flags);
const SERVER_CPUS = PIN ? "1" : undefined;
const CLIENT_CPUS = PIN ? "0" : undefined;
const PROFILE = flags["cpu-prof"];
const WAYFIND_ROOT = flags["wayfind-root"] ?? ROOT;

const CATALOG_SIZE = 10_000;
const QUERY_COUNT = 50;
/**
 * The shape the targets are for (32 callers over 4 connections, each calling again as soon as it is
 * answered), then the same 32 callers at a fleet's pace (10 calls a second each, open loop), then one
 * caller alone (no queueing).
 */
const SHAPES = [
  { connections: 4, streams: 8, name: "4×8", targeted: true, rps: undefined },
  { connections: 4, streams: 8, name: "4×8 at 320/s", targeted: false, rps: 320 },
  { connections: 1, streams: 1, name: "1×1", targeted: false, rps: undefined },
] as const;
type Shape = (typeof SHAPES)[number];
const MAIN_SHAPE = SHAPES[0];
const TENANT = "bench";
const RSS_TARGET_MB = 200;

const work = mkdtempSync(join(tmpdir(), "wayfind-grpc-10k-"));
const profDir = join(work, "cpu-prof");

interface Load {
  readonly label: string;
  readonly detail: string;
  readonly targetP99Ms: number;
  readonly proto: string;
  readonly call: string;
  /** The request data of the n-th ghz run against the server (n counts every run, warm-ups too). */
  readonly data: (n: number) => object;
  /** A JSON file holding the data (a long list of messages), passed to ghz instead of `data`. */
  readonly dataFile?: string;
  /** One message for the probe (templates are fine: ghz fills them). */
  readonly probe: object;
}

interface Measured {
  readonly result: LoadResult;
  readonly cpuUsPerCall: number;
  /** All CPUs' busy time during the run, as a share of one core (server + ghz + anything else). */
  readonly machinePct: number;
  readonly window: { startUs: number; endUs: number };
}

interface Start {
  readonly label: string;
  readonly ms: number;
  readonly idleMiB: number;
  readonly warmMiB?: number;
  readonly afterMiB?: number;
  readonly peakMiB?: number;
}

/**
 * The smallest arguments a schema accepts: each required property with its default, first enum value
 * or a plain value of its type. Checked with the server's own checker, so the bench fails loudly if
 * the "valid" row would in fact measure the repair path.
 */
function validArguments(name: string, schema: JsonObject | undefined): JsonObject {
  const properties = (schema?.properties ?? {}) as Record<string, JsonObject>;
  const required = (schema?.required ?? []) as string[];
  const plainValue = (p: JsonObject = {}): unknown => {
    if (p.default !== undefined) return p.default;
    if (Array.isArray(p.enum)) return p.enum[0];
    const type = Array.isArray(p.type) ? p.type[0] : p.type;
    if (type === "number" || type === "integer") return typeof p.minimum === "number" ? p.minimum : 1;
    if (type === "boolean") return true;
    if (type === "array") return [];
    if (type === "object") return {};
    return "x";
  };
  const args: JsonObject = Object.fromEntries(
    required.map((key) => [key, plainValue(properties[key])]),
  ) as JsonObject;
  const problems = argumentChecker(schema ?? {})(args);
  if (problems.length > 0)
    throw new Error(`bench: no valid arguments for ${name}: ${JSON.stringify(problems)}`);
  return args;
}

/** The 10k catalog as a JSONL file plus a config that loads it; returns the config path. */
function writeCatalogConfig(): {
  config: string;
  emptyConfig: string;
  tools: number;
  resolveName: string;
  resolveArgs: JsonObject;
} {
  const tools = growCatalog(CATALOG_SIZE);
  const catalogs = writeCatalogFiles(work, tools);
  const config = join(work, "wayfind-10k.yaml");
  // Words only: these rows measure the service's own paths (hybrid search's cost is bench/semantic.ts's),
  // and embedding 10,000 tools in the background would share the cores with the load runs.
  const lexical = "tool_search: {semantic: {enabled: false}}\n";
  writeFileSync(config, `${catalogs}${lexical}`);
  const emptyConfig = join(work, "wayfind-empty.yaml");
  writeFileSync(emptyConfig, `catalogs: []\n${lexical}`);
  // A deferred tool a model would call: the first gold tool of the first toolbench query.
  const names = new Set(tools.map((t) => (t.namespace ? `${t.namespace}.${t.name}` : t.name)));
  const gold = readQueries("toolbench_queries.jsonl").flatMap((q) => q.gold);
  const resolveName = gold.find((name) => names.has(name)) ?? [...names][0] ?? "";
  const resolveTool = tools.find(
    (t: ToolInput) => (t.namespace ? `${t.namespace}.${t.name}` : t.name) === resolveName,
  );
  const resolveArgs = validArguments(resolveName, resolveTool?.argsSchema);
  return { config, emptyConfig, tools: tools.length, resolveName, resolveArgs };
}

function serveArgs(config: string, dataDir: string, profileDir: string | undefined): string[] {
  return [
    ...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []),
    ...wayfindServeArgs(config, dataDir),
  ];
}

async function timedStart(
  label: string,
  config: string,
  dataDir: string,
  profileDir?: string,
): Promise<{ server: ServerProcess; ms: number; listeningUs: number }> {
  process.stderr.write(`· starting wayfind: ${label}\n`);
  const started = performance.now();
  const server = await spawnServer(serveArgs(config, dataDir, profileDir), {
    cpus: SERVER_CPUS,
    cwd: WAYFIND_ROOT,
    logFile: join(work, `${label.replace(/\W+/g, "-")}.log`),
  });
  return { server, ms: performance.now() - started, listeningUs: monotonicUs() };
}

let ghzRuns = 0;

/** One table row: the measured runs of one RPC at one shape, in one phase of the run. */
interface Row {
  readonly label: string;
  readonly load: Load;
  readonly shape: Shape;
  /** Judged against the load's p99 target. */
  readonly targeted: boolean;
  readonly runs: Measured[];
}

async function measure(
  ghz: string,
  server: ServerProcess,
  load: Load,
  shape: Shape,
  durationS: number,
): Promise<Measured> {
  const spec: LoadSpec = {
    proto: load.proto,
    call: load.call,
    data: load.data(ghzRuns++),
    dataFile: load.dataFile,
    connections: shape.connections,
    streams: shape.streams,
    durationS,
    rps: shape.rps,
    cpus: CLIENT_CPUS,
  };
  const cpuBefore = server.cpuMs();
  const machineBefore = machineBusyMs();
  const startUs = monotonicUs();
  const started = performance.now();
  const result = await runGhz(ghz, server.port, spec);
  const endUs = monotonicUs();
  const cpuMs = server.cpuMs() - cpuBefore;
  const wallMs = performance.now() - started;
  result.serverCpuPct = (cpuMs / wallMs) * 100;
  return {
    result,
    machinePct: ((machineBusyMs() - machineBefore) / wallMs) * 100,
    cpuUsPerCall: (cpuMs * 1000) / Math.max(1, result.count),
    window: { startUs, endUs },
  };
}

/** Busy (non-idle, non-iowait) time of all CPUs so far, from /proc/stat, in ms; NaN elsewhere. */
function machineBusyMs(): number {
  try {
    const [, ...fields] = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/);
    const ticks = fields.map(Number);
    const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0);
    return ((total - (ticks[3] ?? 0) - (ticks[4] ?? 0)) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

const fmt = (n: number | undefined, digits = 2) =>
  n !== undefined && Number.isFinite(n) ? n.toFixed(digits) : "-";
/** MiB → MB (the target is in MB). */
const mb = (mib: number | undefined) => (mib === undefined ? undefined : (mib * 1024 * 1024) / 1e6);

function countActivations(dataDir: string): number | undefined {
  try {
    const db = new Database(join(dataDir, "wayfind.db"), { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare("SELECT count(*) AS n FROM tool_activations").get() as { n: number } | undefined;
      return row?.n;
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}

async function main() {
  const ghz = await ensureGhz();
  const runtime = await prepareWayfind(WAYFIND_ROOT);
  process.stderr.write(`· growing a ${CATALOG_SIZE}-tool catalog\n`);
  const { config, emptyConfig, tools, resolveName, resolveArgs } = writeCatalogConfig();
  const queries = readQueries("toolbench_queries.jsonl")
    .slice(0, QUERY_COUNT)
    .map((q) => ({ caller: { tenant_id: TENANT }, query: q.query, limit: 8 }));
  const queryFile = join(work, "search-queries.json");
  writeFileSync(queryFile, JSON.stringify(queries));
  const firstProfile = PROFILE ? join(profDir, "first-start") : undefined;
  const restartProfile = PROFILE ? join(profDir, "restart") : undefined;
  for (const dir of [firstProfile, restartProfile]) if (dir) mkdirSync(dir, { recursive: true });
  const startups: { label: string; dir: string; listeningUs: number }[] = [];

  const loads: Load[] = [
    {
      label: "SearchTools",
      detail: `${queries.length} toolbench queries, round-robin, limit 8`,
      targetP99Ms: 3,
      proto: "wayfind/v1/tools.proto",
      call: "wayfind.v1.ToolDiscoveryService/SearchTools",
      data: () => queries,
      dataFile: queryFile,
      probe: queries[0] ?? {},
    },
    {
      label: "ResolveTool",
      detail: `activate deferred ${resolveName}; session per worker, new run per call`,
      targetP99Ms: 2,
      // ghz numbers requests from 0 in every run: the run number keeps each run id new, so every
      // call activates (a repeated run id would find the tool already active).
      proto: "wayfind/v1/tools.proto",
      call: "wayfind.v1.ToolDiscoveryService/ResolveTool",
      data: (n) => ({
        caller: { tenant_id: TENANT, session_id: "s-{{.WorkerID}}", run_id: `r${n}-{{.RequestNumber}}` },
        name: resolveName,
      }),
      probe: { caller: { tenant_id: TENANT, session_id: "probe", run_id: "probe" }, name: resolveName },
    },
    {
      label: "CheckToolCall",
      detail: `dispatch-mode call of ${resolveName} with valid arguments ${JSON.stringify(resolveArgs)}: checked, then activated; new run per call`,
      // Issue 18: validation adds at most 0.5 ms p50 over ResolveTool.
      targetP99Ms: 2,
      proto: "wayfind/v1/tools.proto",
      call: "wayfind.v1.ToolDiscoveryService/CheckToolCall",
      data: (n) => ({
        caller: { tenant_id: TENANT, session_id: "c-{{.WorkerID}}", run_id: `c${n}-{{.RequestNumber}}` },
        name: resolveName,
        arguments: resolveArgs,
      }),
      probe: {
        caller: { tenant_id: TENANT, session_id: "probe", run_id: "probe" },
        name: resolveName,
        arguments: resolveArgs,
      },
    },
    {
      label: "CheckToolCall invalid",
      detail: `the same call with arguments ${resolveName}'s schema refuses: the repair answer, no activation`,
      targetP99Ms: 2,
      proto: "wayfind/v1/tools.proto",
      call: "wayfind.v1.ToolDiscoveryService/CheckToolCall",
      data: (n) => ({
        caller: { tenant_id: TENANT, session_id: "i-{{.WorkerID}}", run_id: `i${n}-{{.RequestNumber}}` },
        name: resolveName,
        arguments: { query: "weather in Paris", limit: 3 },
      }),
      probe: {
        caller: { tenant_id: TENANT, session_id: "probe", run_id: "probe" },
        name: resolveName,
        arguments: {},
      },
    },
  ];

  const starts: Start[] = [];
  const rows: Row[] = [];
  const notes: string[] = [];
  let activations: { recorded: number | undefined; calls: number } | undefined;

  // 1. The floor: node + wayfind's modules (prebuilt, or through tsx) with no catalog.
  {
    const { server, ms } = await timedStart("empty config", emptyConfig, join(work, "data-empty"));
    starts.push({
      label: `empty config (node + ${runtime} boot; the floor)`,
      ms,
      idleMiB: server.rss().nowMiB,
    });
    await server.stop();
  }

  // 2. First start on a fresh data dir: indexes the 10k catalog. The loads run against this one.
  const dataDir = join(work, "data-10k");
  const first = await timedStart("10k first start", config, dataDir, firstProfile);
  if (firstProfile)
    startups.push({ label: "first start (indexing)", dir: firstProfile, listeningUs: first.listeningUs });
  try {
    const idleMiB = first.server.rss().nowMiB;
    for (const load of loads) {
      const { status, error } = await probeStatus(ghz, first.server.port, { ...load, data: load.probe });
      if (status !== "OK") throw new Error(`${load.label} answers ${status}: ${error}`);
    }
    const warmMiB = first.server.rss().nowMiB;
    // Each RPC in turn: warm-up, then its shapes interleaved over the rounds (a burst of background
    // load hits one run of a row, not all). SearchTools goes first, on an empty activation table;
    // ResolveTool fills that table (one row per call), and SearchTools runs once more after it.
    for (const load of loads) {
      if (WARMUP_S > 0) {
        process.stderr.write(`· warm-up ${load.label} ${WARMUP_S} s\n`);
        await measure(ghz, first.server, load, MAIN_SHAPE, WARMUP_S);
      }
      const loadRows = SHAPES.map((shape) => ({
        label: load.label,
        load,
        shape,
        targeted: shape.targeted,
        runs: [] as Measured[],
      }));
      rows.push(...loadRows);
      for (let round = 0; round < ROUNDS; round++)
        for (const row of loadRows) {
          process.stderr.write(
            `· round ${round + 1}/${ROUNDS}: ${load.label} ${row.shape.name} ${DURATION_S} s\n`,
          );
          row.runs.push(await measure(ghz, first.server, load, row.shape, DURATION_S));
        }
    }
    const search = loads[0];
    if (search) {
      const live = countActivations(dataDir);
      process.stderr.write(`· ${search.label} again, ${live ?? "?"} activations in the table\n`);
      rows.push({
        label: `${search.label}, ${live ?? "?"} run activations live`,
        load: search,
        shape: MAIN_SHAPE,
        targeted: true,
        runs: [await measure(ghz, first.server, search, MAIN_SHAPE, DURATION_S)],
      });
    }
    const { nowMiB, peakMiB } = first.server.rss();
    starts.push({
      label: `${tools} tools, fresh data dir (indexing)`,
      ms: first.ms,
      idleMiB,
      warmMiB,
      afterMiB: nowMiB,
      peakMiB,
    });
  } finally {
    await first.server.stop();
  }
  const resolveCalls = rows
    .filter((row) => row.load.label === "ResolveTool")
    .flatMap((row) => row.runs)
    .reduce((n, m) => n + m.result.count, 0);
  if (resolveCalls > 0) activations = { recorded: countActivations(dataDir), calls: resolveCalls };

  // 3. Restart on the same data dir: the catalog is already indexed.
  {
    const { server, ms, listeningUs } = await timedStart("10k restart", config, dataDir, restartProfile);
    if (restartProfile) startups.push({ label: "restart", dir: restartProfile, listeningUs });
    const idleMiB = server.rss().nowMiB;
    for (const load of loads) await probeStatus(ghz, server.port, { ...load, data: load.probe });
    const { nowMiB, peakMiB } = server.rss();
    starts.push({
      label: `${tools} tools, same data dir (restart)`,
      ms,
      idleMiB,
      warmMiB: nowMiB,
      peakMiB,
    });
    await server.stop();
  }

  notes.push(
    runtime === "dist"
      ? "wayfind ran prebuilt (bin/wayfind.js → dist/, built by npm ci / npm run build)"
      : "wayfind ran its TypeScript through tsx (no usable dist/): the floor includes the tsx loader",
  );
  printReport(loads, rows, starts, activations, notes);
  if (firstProfile) printProfile(firstProfile, rows, startups);
}

function printReport(
  loads: readonly Load[],
  rows: readonly Row[],
  starts: readonly Start[],
  activations: { recorded: number | undefined; calls: number } | undefined,
  notes: readonly string[],
) {
  const load = loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
  const inFlight = MAIN_SHAPE.connections * MAIN_SHAPE.streams;
  console.log(
    `\nwayfind, ${CATALOG_SIZE.toLocaleString("en")}-tool catalog, native gRPC unary over loopback (h2c), load ` +
      `client ghz (closed loop: each caller sends its next request when the last one returns); ` +
      `${ROUNDS > 1 ? `median (by req/s) of ${ROUNDS} interleaved runs of ` : ""}${DURATION_S} s, after ` +
      `${WARMUP_S} s warm-up; Node ${process.version}, ${cores} cores, load average ${load}`,
  );
  console.log(
    PIN
      ? "server pinned to CPU 1, ghz to CPU 0 (taskset): the server has one core, ghz the other"
      : `NOTE: ghz shares the ${cores} cores with the server (not pinned): client CPU inflates latency and caps req/s`,
  );
  console.log(
    "server: `wayfind serve --config` with the catalog file, tool_search defaults (deferred) with words only (semantic off), info log " +
      "(one JSON line per call) to a file" +
      (PROFILE ? "; RUNNING UNDER --cpu-prof (slower than normal)" : "") +
      "\n",
  );
  for (const l of loads) console.log(`${l.label}: ${l.detail}`);
  console.log();

  const body = rows.map(({ label, load: l, shape, targeted, runs }) => {
    const target = targeted ? `< ${l.targetP99Ms} ms` : "(no target)";
    if (runs.length === 0) return [label, shape.name, "-", "-", "-", "-", "-", "-", "-", "-", target, ""];
    const { result: r, machinePct } = medianByRps(runs);
    const cpu = runs.map((m) => m.cpuUsPerCall).sort((a, b) => a - b);
    const met = r.errors === 0 && r.p99Ms < l.targetP99Ms;
    return [
      label,
      shape.name,
      Math.round(r.rps).toString(),
      fmt(r.p50Ms),
      fmt(r.p95Ms),
      fmt(r.p99Ms),
      r.errors.toString(),
      `${Math.round(r.serverCpuPct ?? Number.NaN)}%`,
      Math.round(cpu[Math.floor((cpu.length - 1) / 2)] ?? Number.NaN).toString(),
      `${Math.round(machinePct)}%`,
      target,
      targeted ? (met ? "met" : "MISSED") : "",
    ];
  });
  printAligned(
    [
      "rpc",
      "conns×streams",
      "req/s",
      "p50 ms",
      "p95 ms",
      "p99 ms",
      "errors",
      "srv CPU",
      "CPU µs/call",
      "machine CPU",
      "p99 target",
      "",
    ],
    body,
    new Set([2, 3, 4, 5, 6, 7, 8, 9, 10]),
  );
  for (const { label, shape, runs } of rows) {
    if (runs.length > 1)
      console.log(
        `  ${label} ${shape.name}: p99 per run ${runs.map((m) => fmt(m.result.p99Ms)).join(" / ")} ms, ` +
          `req/s per run ${runs.map((m) => Math.round(m.result.rps)).join(" / ")}`,
      );
    for (const m of runs.filter((run) => run.result.errors > 0))
      console.log(`  errors in ${label} ${shape.name}: ${m.result.errorSummary}`);
  }
  if (activations)
    console.log(
      `  ResolveTool: ${activations.recorded ?? "?"} activations in SQLite after the runs, for ${activations.calls} ` +
        "measured calls (warm-up, probes and calls in flight at a run's end add some)",
    );
  console.log(
    "  srv CPU = server CPU time / wall time (100% = one core); CPU µs/call = server CPU time / calls; " +
      `machine CPU = all processes (server, ghz, anything else running), ${cores * 100}% = every core busy`,
  );
  // Little's law for a closed loop: in flight = throughput × latency.
  for (const l of loads) {
    const needRps = inFlight / (l.targetP99Ms / 1000);
    console.log(
      `  ${l.label}: with ${inFlight} callers always in flight, mean latency = ${inFlight} / req/s; ` +
        `p99 < ${l.targetP99Ms} ms needs > ${Math.round(needRps)} req/s, i.e. < ${Math.round(1e6 / needRps)} µs ` +
        "of server CPU per call on its one event-loop thread",
    );
  }

  console.log(
    `\nserver start (spawn → "listening" log line, 50 ms polling) and RSS in MB (target after loading < ${RSS_TARGET_MB} MB)`,
  );
  printAligned(
    ["start", "to listening ms", "RSS listening", "RSS first calls", "RSS after load", "peak RSS", ""],
    starts.map((s) => {
      const judged = mb(s.warmMiB ?? s.idleMiB);
      return [
        s.label,
        fmt(s.ms, 0),
        fmt(mb(s.idleMiB), 1),
        fmt(mb(s.warmMiB), 1),
        fmt(mb(s.afterMiB), 1),
        fmt(mb(s.peakMiB), 1),
        s.warmMiB === undefined || judged === undefined ? "" : judged < RSS_TARGET_MB ? "met" : "MISSED",
      ];
    }),
    new Set([1, 2, 3, 4, 5]),
  );
  console.log(
    "  RSS first calls = after one call of each RPC (builds whatever is lazy), judged against the target; " +
      "peak = VmHWM over the process life. The empty-config row is the floor: node + wayfind's modules",
  );
  for (const note of notes) console.log(`  ${note}`);
}

function printProfile(
  dir: string,
  rows: readonly Row[],
  startups: readonly { label: string; dir: string; listeningUs: number }[],
) {
  const file = mainThreadProfile(dir);
  if (!file) {
    console.log(`\nno .cpuprofile written in ${dir}`);
    return;
  }
  console.log(
    `\nCPU profile of the loaded server (main thread): ${file}\n` +
      "functions by file (line numbers of built or transpiled code would not match the sources); total = self + callees",
  );
  for (const { label, shape, targeted, runs } of rows) {
    if (!targeted) continue;
    const windows = runs.map((m) => m.window);
    const all = summarizeProfile(file, WAYFIND_ROOT, windows, () => true, 12, "self");
    const src = summarizeProfile(file, WAYFIND_ROOT, windows, (f) => f.startsWith("src/"), 12, "total");
    console.log(`\n${label} ${shape.name}: ${all.samples} samples in its measured runs`);
    printAligned(
      ["self %", "total %", "top self time (any code)"],
      all.top.map((h) => [fmt(h.selfPct, 1), fmt(h.totalPct, 1), h.where]),
      new Set([0, 1]),
    );
    printAligned(
      ["self %", "total %", "top src/ by total time"],
      src.top.map((h) => [fmt(h.selfPct, 1), fmt(h.totalPct, 1), h.where]),
      new Set([0, 1]),
    );
  }
  for (const startup of startups) {
    const startFile = mainThreadProfile(startup.dir);
    if (!startFile) continue;
    // Everything from process start to the "listening" line.
    const window = [{ startUs: 0, endUs: startup.listeningUs }];
    const src = summarizeProfile(startFile, WAYFIND_ROOT, window, (f) => f.startsWith("src/"), 12, "total");
    console.log(`\nserver ${startup.label}, spawn → listening: ${src.samples} samples (${startFile})`);
    printAligned(
      ["self %", "total %", "top src/ by total time"],
      src.top.map((h) => [fmt(h.selfPct, 1), fmt(h.totalPct, 1), h.where]),
      new Set([0, 1]),
    );
  }
}

try {
  await main();
} finally {
  if (!PROFILE) rmSync(work, { recursive: true, force: true });
}
