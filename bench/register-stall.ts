/**
 * How long one large RegisterTools call holds the server's event loop. The server is a child process
 * (`wayfind serve`); this process asks grpc.health.v1 Check back to back while a worker thread sends
 * the call (so encoding the request here does not delay the checks), and reports the slowest check
 * answer and how long the call took, plus the server's own longest event-loop delay during the call
 * (`wayfind_nodejs_eventloop_lag_max_seconds` from GET /metrics, whose histogram every scrape resets:
 * one scrape before the call, one after). The check's latency also counts CPU taken by the server's
 * worker threads and this process on a shared machine; the loop delay is the stall itself. Cases, each
 * within the bounds of src/limits.ts:
 *   - 5,000 tools, each a two-value args schema with one example (every schema compiled by Ajv);
 *   - the same 5,000 tools without examples (nothing compiled);
 *   - 10 tools, each a 999-value schema with 16 examples of ~16 KB;
 *   - one tool with a 999-value schema and one example: its compile alone is the floor.
 * Each round registers new tools under a new source, so every call does the full work.
 *
 * Usage: node --import tsx bench/register-stall.ts [--rounds N] [--protocol P] [--wayfind-root DIR]
 *   --rounds N          calls per case; the median and the worst are reported (default 3)
 *   --protocol P        grpc (default), connect (binary) or connect-json: how the call travels
 *   --wayfind-root DIR  serve wayfind from another checkout (A/B of a change; needs its node_modules)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { isMainThread, parentPort, Worker } from "node:worker_threads";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Health } from "../gen/ts/grpc/health/v1/health_pb.ts";
import { ToolDiscoveryService } from "../gen/ts/wayfind/v1/tools_pb.ts";
import type { JsonObject } from "../src/json.ts";
import {
  prepareWayfind,
  printAligned,
  ROOT,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";

interface CallRequest {
  readonly port: number;
  readonly caseName: CaseName;
  readonly round: number;
  readonly protocol: Protocol;
}

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

/** Worker: sends one RegisterTools call per message, answers with its duration or error. */
function serveCalls(): void {
  parentPort?.on("message", async ({ port, caseName, round, protocol }: CallRequest) => {
    const baseUrl = `http://127.0.0.1:${port}`;
    const transport =
      protocol === "grpc"
        ? createGrpcTransport({ baseUrl })
        : createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: protocol === "connect" });
    const tools = createClient(ToolDiscoveryService, transport);
    const request = {
      caller: { tenantId: "bench" },
      source: `stall-${round}`,
      namespace: `r${round}`,
      tools: CASES[caseName](`tool_${round}`),
    };
    const started = performance.now();
    try {
      const result = await tools.registerTools(request);
      parentPort?.postMessage({ ms: performance.now() - started, added: result.added });
    } catch (error) {
      parentPort?.postMessage({ ms: performance.now() - started, error: String(error) });
    }
  });
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
  writeFileSync(config, "catalogs: []\n");
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
  const rows: string[][] = [];
  let round = 0;
  try {
    for (const caseName of Object.keys(CASES) as CaseName[]) {
      const calls: number[] = [];
      const slowest: number[] = [];
      const loopDelays: number[] = [];
      let checks = 0;
      for (let r = 0; r < rounds; r++) {
        round++;
        await loopDelayMs(server.port); // resets the server's histogram
        let running = true;
        let slowestMs = 0;
        const probe = (async () => {
          while (running) {
            const started = performance.now();
            await health.check({});
            slowestMs = Math.max(slowestMs, performance.now() - started);
            checks++;
          }
        })();
        const answer = await new Promise<{ ms: number; error?: string }>((resolve, reject) => {
          worker.once("error", reject);
          worker.once("message", (message: { ms: number; error?: string }) => {
            worker.off("error", reject);
            resolve(message);
          });
          worker.postMessage({ port: server.port, caseName, round, protocol } satisfies CallRequest);
        }).finally(() => {
          running = false;
        });
        await probe;
        if (answer.error) throw new Error(`${caseName}: ${answer.error}`);
        calls.push(answer.ms);
        slowest.push(slowestMs);
        loopDelays.push(await loopDelayMs(server.port));
      }
      rows.push([
        caseName,
        median(calls).toFixed(0),
        `${median(slowest).toFixed(0)}, ${Math.max(...slowest).toFixed(0)}`,
        `${median(loopDelays).toFixed(0)}, ${Math.max(...loopDelays).toFixed(0)}`,
        `${checks}`,
      ]);
    }
  } finally {
    await worker.terminate();
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
  console.log(
    `protocol: ${protocol}; server: ${root} (${runtime}); load average ${loadavg()[0]?.toFixed(1)} on a shared host\n`,
  );
  printAligned(
    [
      "case",
      "call ms (median)",
      "slowest health check ms (median, worst)",
      "server loop delay max ms (median, worst)",
      "checks answered",
    ],
    rows,
    new Set([1, 2, 3, 4]),
  );
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
