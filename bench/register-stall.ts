/**
 * How long one large call holds the server's event loop. The server is a child process
 * (`wayfind serve`, hybrid search on: the shipped model computes vectors in the background); this
 * process asks grpc.health.v1 Check back to back while a worker thread sends the call (so encoding
 * the request here does not delay the checks), and reports the slowest check answer and how long the
 * call took, plus the server's own longest event-loop delay during the call
 * (`wayfind_nodejs_eventloop_lag_max_seconds` from GET /metrics, whose histogram every scrape resets:
 * one scrape before the call, one after). The check's latency also counts CPU taken by the server's
 * worker threads and this process on a shared machine; the loop delay is the stall itself. Cases, each
 * within the bounds of src/limits.ts:
 *   - 5,000 tools, each a two-value args schema with one example (every schema compiled by Ajv);
 *   - the same 5,000 tools without examples (nothing compiled);
 *   - 10 tools, each a 999-value schema with 16 examples of ~16 KB;
 *   - one tool with a 999-value schema and one example: its compile alone is the floor.
 * Each round registers new tools under a new source, so every call does the full work.
 * Then the skill probes of issue 42, each right after a registration of 5,000 new tools, so semantic
 * indexing runs while they do (the table says how many tools still waited for their vector). The
 * loop delay of a probe's window also counts the indexing's own work, so the first row is a window
 * of indexing alone, without a call:
 *   - SearchSkills with regexes too broad to run (refused);
 *   - GetRelevantSkills over ten skills of about a megabyte each (text built to be slow to redact);
 *   - GetSkills of those ten skills;
 *   - GetRelevantSkills with a task of 32 words that every one of 20,000 skills holds.
 * The last line is the worst stall of the probes with semantic indexing running.
 *
 * Usage: node --import tsx bench/register-stall.ts [--rounds N] [--protocol P] [--wayfind-root DIR]
 *   --rounds N          calls per case; the median and the worst are reported (default 3)
 *   --protocol P        grpc (default), connect (binary) or connect-json: how the call travels
 *   --wayfind-root DIR  serve wayfind from another checkout (A/B of a change; needs its node_modules)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { isMainThread, parentPort, Worker } from "node:worker_threads";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Health } from "../gen/ts/grpc/health/v1/health_pb.ts";
import { SearchType } from "../gen/ts/wayfind/v1/common_pb.ts";
import { SkillFormat, SkillService } from "../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../gen/ts/wayfind/v1/tools_pb.ts";
import type { JsonObject } from "../src/json.ts";
import type { PackFile } from "../src/skills/index.ts";
import {
  prepareWayfind,
  printAligned,
  ROOT,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";
import { craftedPacks } from "./lib/skill-data.ts";

interface CallRequest {
  readonly port: number;
  /** A registration case, or a skill probe. */
  readonly caseName: CaseName | ProbeName;
  readonly round: number;
  readonly protocol: Protocol;
}

/** Skills that all hold the crafted task's words. */
const COMMON_SKILLS = 20_000;
const CRAFTED = craftedPacks(COMMON_SKILLS);
const BIG_NAMES = Array.from({ length: 10 }, (_, i) => `big.procedure_${i}`);
const BENCH_CALLER = { tenantId: "bench", sessionId: "s", runId: "r" };

/** The skill probes: each a function of the worker's clients. */
const PROBES = {
  // The baseline: what the indexing after a registration costs the loop alone, in a window as long.
  "no call: 1 s of indexing alone": async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  },
  "SearchSkills, regexes too broad to run": async (skills: Client<typeof SkillService>) => {
    for (const query of ["[a-z]+q", "(x+x+)+y", "[^x]{20}z", "\\w+\\s+\\w+!"]) {
      const refused = await skills
        .searchSkills({ caller: BENCH_CALLER, query, searchType: SearchType.REGEX })
        .then(
          () => false,
          () => true,
        );
      if (!refused) throw new Error(`regex ${query} ran; it should have been refused as too broad`);
    }
  },
  "GetRelevantSkills, 10 skills of ~1 MB": async (skills: Client<typeof SkillService>) => {
    await skills.getRelevantSkills({
      caller: BENCH_CALLER,
      task: "big crafted procedure",
      topK: 10,
      maxTokens: 6000,
    });
  },
  "GetSkills, 10 skills of ~1 MB": async (skills: Client<typeof SkillService>) => {
    await skills.getSkills({
      caller: BENCH_CALLER,
      names: BIG_NAMES,
      format: SkillFormat.INJECTION,
      maxTokens: 6000,
    });
  },
  "GetRelevantSkills, 32 words all of 20,000 skills hold": async (skills: Client<typeof SkillService>) => {
    await skills.getRelevantSkills({ caller: BENCH_CALLER, task: CRAFTED.commonWords.join(" "), topK: 10 });
  },
} as const;
type ProbeName = keyof typeof PROBES;
/** Probes that make no call: their windows are not counted as a call's stall. */
const BASELINE: Partial<Record<ProbeName, true>> = { "no call: 1 s of indexing alone": true };

/** How the call travels: native gRPC (grpc-js decodes), or Connect binary or JSON (connect-node). */
const PROTOCOLS = ["grpc", "connect", "connect-json"] as const;
type Protocol = (typeof PROTOCOLS)[number];

const CASES = {
  "5,000 two-value schemas, 1 example each": (prefix: string) =>
    Array.from({ length: 5_000 }, (_, i) => ({
      name: `${prefix}_${i}`,
      description: `Tool number ${i} of a large source.`,
      argsSchema: { type: "object" },
      examples: [{ args: {} }],
    })),
  "5,000 two-value schemas, no examples": (prefix: string) =>
    Array.from({ length: 5_000 }, (_, i) => ({
      name: `${prefix}_${i}`,
      description: `Tool number ${i} of a large source.`,
      argsSchema: { type: "object" },
    })),
  "10 schemas of 999 values, 16 x 16 KB examples": (prefix: string) =>
    Array.from({ length: 10 }, (_, i) => ({
      name: `${prefix}_${i}`,
      argsSchema: wideSchema(i),
      examples: Array.from({ length: 16 }, () => ({ args: wideExample() })),
    })),
  "1 schema of 999 values, 1 example (floor)": (prefix: string) => [
    { name: `${prefix}_0`, argsSchema: wideSchema(0), examples: [{ args: wideExample() }] },
  ],
} as const;
type CaseName = keyof typeof CASES;

/** 332 string properties: 3 + 332 × 3 = 999 JSON values, the most one schema may hold. */
function wideSchema(salt: number): JsonObject {
  return {
    type: "object",
    properties: Object.fromEntries(
      Array.from({ length: 332 }, (_, p) => [`p${p}`, { type: "string", maxLength: 100 + salt }]),
    ),
  };
}

/** Every property set: just under 16,384 bytes of JSON. */
function wideExample(): JsonObject {
  return Object.fromEntries(Array.from({ length: 332 }, (_, p) => [`p${p}`, "x".repeat(39)]));
}

/** Worker: sends one RegisterTools call, or runs one skill probe, per message; answers with its duration or error. */
function serveCalls(): void {
  parentPort?.on("message", async ({ port, caseName, round, protocol }: CallRequest) => {
    const baseUrl = `http://127.0.0.1:${port}`;
    const transport =
      protocol === "grpc"
        ? createGrpcTransport({ baseUrl })
        : createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: protocol === "connect" });
    const started = performance.now();
    try {
      if (caseName in PROBES) await PROBES[caseName as ProbeName](createClient(SkillService, transport));
      else
        await createClient(ToolDiscoveryService, transport).registerTools({
          caller: { tenantId: "bench" },
          source: `stall-${round}`,
          namespace: `r${round}`,
          tools: CASES[caseName as CaseName](`tool_${round}`),
        });
      parentPort?.postMessage({ ms: performance.now() - started });
    } catch (error) {
      parentPort?.postMessage({ ms: performance.now() - started, error: String(error) });
    }
  });
}

/** The crafted packs as files under `dir`, and the config lines that load them. */
function writeCraftedPacks(dir: string): string {
  const write = (name: string, files: readonly PackFile[]) => {
    mkdirSync(join(dir, name), { recursive: true });
    for (const file of files) writeFileSync(join(dir, name, file.path), file.content);
    return `{name: ${name}, path: ${join(dir, name)}}`;
  };
  return `skill_packs: [${write("big", CRAFTED.big)}, ${write("common", CRAFTED.common)}]\n`;
}

async function main(): Promise<void> {
  const { values: flags } = parseArgs({
    options: {
      rounds: { type: "string", default: "3" },
      protocol: { type: "string", default: "grpc" },
      "wayfind-root": { type: "string" },
    },
    strict: true,
  });
  const protocol = flags.protocol as Protocol;
  if (!PROTOCOLS.includes(protocol)) throw new Error(`--protocol must be one of ${PROTOCOLS.join(", ")}`);
  const rounds = Number(flags.rounds);
  const root = flags["wayfind-root"] ?? ROOT;
  const runtime = await prepareWayfind(root);
  const work = mkdtempSync(join(tmpdir(), "wayfind-register-stall-"));
  const config = join(work, "wayfind.yaml");
  writeFileSync(
    config,
    `catalogs: []\ntool_search: {semantic: {enabled: true}}\n${writeCraftedPacks(join(work, "skills"))}`,
  );
  const server = await spawnServer(wayfindServeArgs(config, join(work, "data")), {
    logFile: join(work, "server.log"),
    cwd: root,
  });
  // The worker runs this file too, through tsx as this process does (workers do not inherit --import).
  const worker = new Worker(
    `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})
      .then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`,
    { eval: true },
  );
  const health = createClient(Health, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.port}` }));
  let round = 0;
  /** Sends one call (a case or a probe) through the worker while health checks run: what it cost. */
  const measured = async (caseName: CaseName | ProbeName) => {
    round++;
    await loopDelayMs(server.port); // resets the server's histogram
    let running = true;
    let slowestMs = 0;
    let checks = 0;
    const probe = (async () => {
      while (running) {
        const started = performance.now();
        await health.check({});
        slowestMs = Math.max(slowestMs, performance.now() - started);
        checks++;
      }
    })();
    const answer = await callThroughWorker(worker, { port: server.port, caseName, round, protocol }).finally(
      () => {
        running = false;
      },
    );
    await probe;
    if (answer.error) throw new Error(`${caseName}: ${answer.error}`);
    return { callMs: answer.ms, slowestMs, loopDelayMs: await loopDelayMs(server.port), checks };
  };
  const rows: string[][] = [];
  const probeRows: string[][] = [];
  let worstProbe = { loopDelayMs: 0, slowestMs: 0, name: "" };
  try {
    for (const caseName of Object.keys(CASES) as CaseName[]) {
      const runs = [];
      for (let r = 0; r < rounds; r++) runs.push(await measured(caseName));
      rows.push(summaryRow(caseName, runs));
    }
    for (const probeName of Object.keys(PROBES) as ProbeName[]) {
      const runs = [];
      const pending: number[] = [];
      for (let r = 0; r < rounds; r++) {
        // New tools to embed: semantic indexing runs in the background while the probe does.
        round++;
        await callThroughWorker(worker, {
          port: server.port,
          caseName: "5,000 two-value schemas, no examples",
          round,
          protocol,
        });
        pending.push(await semanticPending(server.port));
        const run = await measured(probeName);
        runs.push(run);
        if (probeName in BASELINE) continue;
        if (run.loopDelayMs > worstProbe.loopDelayMs) worstProbe = { ...run, name: probeName };
      }
      probeRows.push([...summaryRow(probeName, runs), `${Math.min(...pending)}`]);
    }
  } finally {
    await worker.terminate();
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
  console.log(
    `protocol: ${protocol}; server: ${root} (${runtime}); load average ${loadavg()[0]?.toFixed(1)} on a shared host\n`,
  );
  const columns = [
    "call ms (median)",
    "slowest health check ms (median, worst)",
    "server loop delay max ms (median, worst)",
    "checks answered",
  ];
  printAligned(["case", ...columns], rows, new Set([1, 2, 3, 4]));
  console.log("");
  printAligned(
    ["skill probe (semantic indexing running)", ...columns, "tools still to embed (least)"],
    probeRows,
    new Set([1, 2, 3, 4, 5]),
  );
  console.log(
    `\nworst stall with semantic indexing running: ${worstProbe.loopDelayMs.toFixed(0)} ms of server loop delay ` +
      `(slowest health check ${worstProbe.slowestMs.toFixed(0)} ms), in "${worstProbe.name}"; ` +
      "compare the window of indexing alone, above",
  );
}

interface Run {
  readonly callMs: number;
  readonly slowestMs: number;
  readonly loopDelayMs: number;
  readonly checks: number;
}

function summaryRow(name: string, runs: readonly Run[]): string[] {
  const slowest = runs.map((run) => run.slowestMs);
  const delays = runs.map((run) => run.loopDelayMs);
  return [
    name,
    median(runs.map((run) => run.callMs)).toFixed(0),
    `${median(slowest).toFixed(0)}, ${Math.max(...slowest).toFixed(0)}`,
    `${median(delays).toFixed(0)}, ${Math.max(...delays).toFixed(0)}`,
    `${runs.reduce((sum, run) => sum + run.checks, 0)}`,
  ];
}

/** One call through the worker: its duration, or the error it failed with. */
function callThroughWorker(worker: Worker, request: CallRequest): Promise<{ ms: number; error?: string }> {
  return new Promise((resolve, reject) => {
    worker.once("error", reject);
    worker.once("message", (message: { ms: number; error?: string }) => {
      worker.off("error", reject);
      resolve(message);
    });
    worker.postMessage(request);
  });
}

/** Tools still waiting for their vector (GET /readyz). */
async function semanticPending(port: number): Promise<number> {
  const ready = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as {
    checks: { semantic_pending: number };
  };
  return ready.checks.semantic_pending;
}

/** The server's longest event-loop delay since the previous scrape, in ms (prom-client resets it). */
async function loopDelayMs(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("wayfind_nodejs_eventloop_lag_max_seconds "));
  if (line === undefined) throw new Error("GET /metrics has no wayfind_nodejs_eventloop_lag_max_seconds");
  return Number(line.split(" ")[1]) * 1000;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

if (isMainThread) await main();
else serveCalls();
