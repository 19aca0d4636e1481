/**
 * Helpers for the gRPC benches (bench/grpc-throughput.ts, bench/grpc-10k.ts): server child processes
 * (port discovery, CPU and RSS from /proc), the ghz load client (install, run, parse its JSON report)
 * and a plain-text table printer.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { distState } from "../../scripts/dist.js";

const execFileAsync = promisify(execFile);

export const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

export interface ServerProcess {
  readonly pid: number;
  readonly port: number;
  /** Server CPU time (user + system) so far, in ms. */
  cpuMs(): number;
  /** Resident set size now and its peak (VmHWM), in MiB. */
  rss(): { nowMiB: number; peakMiB: number };
  /** SIGTERM, then SIGKILL after 5 s. */
  stop(): Promise<void>;
}

export interface SpawnOptions {
  /** Run under `taskset -c <cpus>` (e.g. "1"). */
  readonly cpus?: string | undefined;
  /** Where the child's stdout (JSON log lines) goes; the "listening" line is read from it. */
  readonly logFile: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Working directory (default: the repo root). */
  readonly cwd?: string | undefined;
}

/**
 * The Node flags `npm start` runs wayfind with (package.json's `start` script, the default launch),
 * so a bench measures the server as a user starts it.
 */
const LAUNCH_FLAGS: readonly string[] = (() => {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    scripts?: { start?: string };
  };
  const words = (manifest.scripts?.start ?? "").split(/\s+/);
  return words
    .slice(words.indexOf("node") + 1, words.indexOf("bin/wayfind.js"))
    .filter((w) => w.startsWith("--"));
})();

/** `wayfind serve` on a free loopback port with this config and data dir: the node arguments. */
export function wayfindServeArgs(config: string, dataDir: string): string[] {
  return [
    ...LAUNCH_FLAGS,
    "bin/wayfind.js",
    "serve",
    "--config",
    config,
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "--data-dir",
    dataDir,
  ];
}

/**
 * Starts `node <nodeArgs>` with stdout to `logFile` (so the parent spends no CPU draining a pipe)
 * and waits for a JSON line with `"msg":"listening"` and a `port`.
 */
export async function spawnServer(
  nodeArgs: readonly string[],
  options: SpawnOptions,
): Promise<ServerProcess> {
  const out = openSync(options.logFile, "w");
  const command = options.cpus ? "taskset" : process.execPath;
  const args = options.cpus ? ["-c", options.cpus, process.execPath, ...nodeArgs] : [...nodeArgs];
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    stdio: ["ignore", out, "pipe"],
    env: { ...process.env, ...options.env },
  });
  closeSync(out);
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    if (stderr.length < 20_000) stderr += chunk;
  });
  let exited: string | undefined;
  child.once("exit", (code, signal) => {
    exited = `exited (${signal ?? code})`;
  });

  let port: number;
  try {
    port = await waitForPort(
      options.logFile,
      () => exited,
      () => stderr,
    );
  } catch (error) {
    // A server that never said where it listens is still a process of this bench.
    await stopChild(child);
    throw error;
  }
  // taskset execs node in place, so the child's pid is the server's.
  const pid = child.pid ?? 0;
  return {
    pid,
    port,
    cpuMs: () => readCpuMs(pid),
    rss: () => readRss(pid),
    stop: () => stopChild(child),
  };
}

async function waitForPort(
  logFile: string,
  exited: () => string | undefined,
  stderr: () => string,
): Promise<number> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    for (const line of readFileSync(logFile, "utf8").split("\n")) {
      if (!line.includes('"listening"')) continue;
      const parsed = JSON.parse(line) as { msg?: string; port?: number };
      if (parsed.msg === "listening" && typeof parsed.port === "number") return parsed.port;
    }
    const status = exited();
    if (status) throw new Error(`server ${status} before listening:\n${stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`server did not report a port within 60 s:\n${stderr()}`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/**
 * Builds dist/ in the checkout at `root` when it is stale, so `bin/wayfind.js` serves the prebuilt
 * JavaScript as a user's does after `npm ci`; returns what the server will run. A checkout without
 * scripts/build.js (an older one, for an A/B) runs its sources through tsx.
 */
export async function prepareWayfind(root: string): Promise<"dist" | "tsx"> {
  const build = join(root, "scripts/build.js");
  if (!existsSync(build)) return "tsx";
  if (distState(root) !== "fresh") {
    process.stderr.write(`· building ${root}/dist (npm run build)\n`);
    await execFileAsync(process.execPath, [build], { cwd: root });
  }
  return distState(root) === "fresh" ? "dist" : "tsx";
}

/** utime + stime of a process from /proc/<pid>/stat (Linux), in ms; NaN elsewhere. */
export function readCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** USER_HZ: 100 on every mainstream Linux build. */
const CLOCK_TICKS = 100;

/** Resident set size of a process now and its peak (VmHWM), in MiB, from /proc (Linux); NaN elsewhere. */
export function readRss(pid: number): { nowMiB: number; peakMiB: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
    return { nowMiB: kb("VmRSS") / 1024, peakMiB: kb("VmHWM") / 1024 };
  } catch {
    return { nowMiB: Number.NaN, peakMiB: Number.NaN };
  }
}

/** ghz from PATH or .tools/bin; runs bench/setup.sh (go install, pinned) when neither has it. */
export async function ensureGhz(): Promise<string> {
  const local = join(ROOT, ".tools/bin/ghz");
  if (existsSync(local)) return local;
  try {
    const { stdout } = await execFileAsync("sh", ["-c", "command -v ghz"]);
    if (stdout.trim()) return stdout.trim();
  } catch {
    // not on PATH
  }
  process.stderr.write("ghz not found: running bench/setup.sh (go install, first time only)\n");
  await new Promise<void>((resolve, reject) => {
    const setup = spawn("bash", [join(ROOT, "bench/setup.sh")], { stdio: ["ignore", "inherit", "inherit"] });
    setup.once("error", reject);
    setup.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`bench/setup.sh exited ${code}`)),
    );
  });
  if (!existsSync(local)) throw new Error("bench/setup.sh did not produce .tools/bin/ghz");
  return local;
}

export interface LoadSpec {
  /** Proto file relative to proto/ (ghz parses it; no reflection needed). */
  readonly proto: string;
  /** `package.Service/Method` */
  readonly call: string;
  /** The request message; an array of messages is sent round-robin (ghz, unary). */
  readonly data: object;
  /**
   * Read the request data from this JSON file instead of passing `data` on the command line (for
   * long arrays of messages); `data` is then ignored.
   */
  readonly dataFile?: string | undefined;
  readonly connections: number;
  /** Streams in flight per connection. */
  readonly streams: number;
  readonly durationS: number;
  /** Send exactly this many requests (ghz --total) instead of running for `durationS`. */
  readonly total?: number | undefined;
  /** Total request rate across all callers (open loop, ghz --rps); unset = as fast as answers come. */
  readonly rps?: number | undefined;
  /** Run ghz under `taskset -c <cpus>`. */
  readonly cpus?: string | undefined;
}

export interface LoadResult {
  readonly count: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  /** Non-OK status codes and error messages, with counts. */
  readonly errorSummary: string;
  /** Server CPU during the run, as a share of one core (filled in by the caller). */
  serverCpuPct?: number;
}

interface GhzReport {
  count: number;
  total: number;
  rps: number;
  latencyDistribution: { percentage: number; latency: number }[] | null;
  statusCodeDistribution: Record<string, number> | null;
  errorDistribution: Record<string, number> | null;
}

/** One bounded ghz run against 127.0.0.1:`port`; the whole run is reported (ghz has no warm-up). */
export async function runGhz(ghz: string, port: number, spec: LoadSpec): Promise<LoadResult> {
  const ghzArgs = [
    "--insecure",
    `--proto=${join(ROOT, "proto", spec.proto)}`,
    `--import-paths=${join(ROOT, "proto")}`,
    `--call=${spec.call}`,
    spec.dataFile ? `--data-file=${spec.dataFile}` : `--data=${JSON.stringify(spec.data)}`,
    `--connections=${spec.connections}`,
    `--concurrency=${spec.connections * spec.streams}`,
    ...(spec.total
      ? [`--total=${spec.total}`]
      : // Calls still in flight when the time is up are neither counted nor errors.
        [`--duration=${spec.durationS}s`, "--duration-stop=ignore"]),
    ...(spec.rps ? [`--rps=${spec.rps}`] : []),
    "--timeout=10s",
    "--format=json",
    ...(spec.cpus ? [`--cpus=${spec.cpus.split(",").length}`] : []),
    `127.0.0.1:${port}`,
  ];
  const command = spec.cpus ? "taskset" : ghz;
  const args = spec.cpus ? ["-c", spec.cpus, ghz, ...ghzArgs] : ghzArgs;
  const { stdout } = await execFileAsync(command, args, {
    maxBuffer: 64 * 1024 * 1024,
    timeout: (spec.total ? 600 : spec.durationS + 30) * 1000,
  });
  const report = JSON.parse(stdout) as GhzReport;
  const at = (percentage: number) =>
    (report.latencyDistribution?.find((entry) => entry.percentage === percentage)?.latency ?? Number.NaN) /
    1e6;
  const statuses = report.statusCodeDistribution ?? {};
  const ok = statuses.OK ?? 0;
  const problems = [
    ...Object.entries(statuses).filter(([code]) => code !== "OK"),
    ...Object.entries(report.errorDistribution ?? {}),
  ].map(([what, n]) => `${n}× ${what}`);
  return {
    count: report.count,
    rps: report.rps,
    p50Ms: at(50),
    p95Ms: at(95),
    p99Ms: at(99),
    errors: report.count - ok,
    errorSummary: [...new Set(problems)].join("; "),
  };
}

/** One call, to see which status a method answers (e.g. whether it is still UNIMPLEMENTED). */
export async function probeStatus(
  ghz: string,
  port: number,
  { proto, call, data }: { proto: string; call: string; data: object },
): Promise<{ status: string; error: string }> {
  const { stdout } = await execFileAsync(ghz, [
    "--insecure",
    `--proto=${join(ROOT, "proto", proto)}`,
    `--import-paths=${join(ROOT, "proto")}`,
    `--call=${call}`,
    `--data=${JSON.stringify(data)}`,
    "-n",
    "1",
    "-c",
    "1",
    "--format=json",
    `127.0.0.1:${port}`,
  ]);
  const report = JSON.parse(stdout) as GhzReport;
  const [status = "none"] = Object.keys(report.statusCodeDistribution ?? {});
  const [error = ""] = Object.keys(report.errorDistribution ?? {});
  return { status, error };
}

/** Prints `body` under `header` as aligned plain-text columns; `rightAligned` holds column indexes. */
export function printAligned(
  header: readonly string[],
  body: readonly (readonly string[])[],
  rightAligned: ReadonlySet<number>,
): void {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (rightAligned.has(i) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of body) console.log(line(row));
}

/** The run with the median req/s (the lower middle one for an even count). */
export function medianByRps<T extends { result: LoadResult }>(runs: readonly T[]): T {
  const sorted = [...runs].sort((a, b) => a.result.rps - b.result.rps);
  const middle = sorted[Math.floor((sorted.length - 1) / 2)];
  if (!middle) throw new Error("no measured run");
  return middle;
}

/** One ghz run with the server's CPU time over it: share of one core, and µs per call. */
export async function runWithServerCpu(
  ghz: string,
  server: ServerProcess,
  spec: LoadSpec,
): Promise<{ result: LoadResult; cpuUsPerCall: number }> {
  const cpuBefore = server.cpuMs();
  const started = performance.now();
  const result = await runGhz(ghz, server.port, spec);
  const cpuMs = server.cpuMs() - cpuBefore;
  result.serverCpuPct = (cpuMs / (performance.now() - started)) * 100;
  return { result, cpuUsPerCall: (cpuMs * 1000) / Math.max(1, result.count) };
}

/** parseArgs options of the flags every ghz benchmark takes, with its own default durations. */
export function loadFlagOptions(durationS: number, warmupS: number) {
  return {
    duration: { type: "string", default: String(durationS) },
    warmup: { type: "string", default: String(warmupS) },
    rounds: { type: "string", default: "3" },
    pin: { type: "boolean", default: false },
  } as const;
}

/** The flags every ghz benchmark takes (`--duration`, `--warmup`, `--rounds`, `--pin`), parsed. */
export interface LoadFlags {
  readonly durationS: number;
  readonly warmupS: number;
  readonly rounds: number;
  /** Server on CPU 1 and ghz on CPU 0 (only with 2+ cores). */
  readonly pin: boolean;
  readonly cores: number;
}

export function loadFlags(values: {
  duration?: string | undefined;
  warmup?: string | undefined;
  rounds?: string | undefined;
  pin?: boolean | undefined;
}): LoadFlags {
  const cores = availableParallelism();
  return {
    durationS: Number(values.duration),
    warmupS: Number(values.warmup),
    rounds: Math.max(1, Number(values.rounds)),
    pin: (values.pin ?? false) && cores >= 2,
    cores,
  };
}
