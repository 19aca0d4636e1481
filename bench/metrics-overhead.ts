/**
 * What Prometheus metrics cost: SearchTools throughput over native gRPC (16 calls in flight from one
 * client, demo catalog) against `wayfind serve` with `server.metrics: true` and with it off, each in
 * its own child process, runs interleaved; the median run per setting. Issue 16's target: metrics on
 * keeps ≥ 97 % of the throughput with metrics off.
 * Usage: node --import tsx bench/metrics-overhead.ts [--seconds S] [--rounds N]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ToolDiscoveryService } from "../gen/ts/wayfind/v1/tools_pb.ts";
import {
  prepareWayfind,
  ROOT,
  type ServerProcess,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";

const IN_FLIGHT = 16;
const QUERIES = ["create a pull request", "read a file", "search the web", "send a message", "list issues"];

async function callsPerSecond(port: number, seconds: number): Promise<number> {
  const client = createClient(
    ToolDiscoveryService,
    createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }),
  );
  const caller = { tenantId: "bench" };
  const until = performance.now() + seconds * 1000;
  let calls = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      for (let i = lane; performance.now() < until; i += IN_FLIGHT) {
        await client.searchTools({ caller, query: QUERIES[i % QUERIES.length] ?? "file" });
        calls++;
      }
    }),
  );
  return calls / seconds;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: "string", default: "4" }, rounds: { type: "string", default: "3" } },
  });
  const runtime = await prepareWayfind(ROOT);
  const work = mkdtempSync(join(tmpdir(), "wayfind-metrics-bench-"));
  const settings = { on: true, off: false } as const;
  const servers: { name: string; server: ServerProcess; runs: number[] }[] = [];
  try {
    // One at a time, inside the try: a server that fails to start never leaves the other running.
    for (const [name, metrics] of Object.entries(settings)) {
      const config = join(work, `${name}.yaml`);
      writeFileSync(
        config,
        `catalogs: [{path: ${join(ROOT, "demo/catalogs/github.jsonl")}, namespace: github}]\nserver: {metrics: ${metrics}}\n`,
      );
      const server = await spawnServer(wayfindServeArgs(config, join(work, name)), {
        logFile: join(work, `${name}.log`),
      });
      servers.push({ name, server, runs: [] });
    }
    for (const s of servers) await callsPerSecond(s.server.port, 1); // warm-up
    for (let round = 0; round < Number(values.rounds); round++)
      for (const s of servers) s.runs.push(await callsPerSecond(s.server.port, Number(values.seconds)));
  } finally {
    for (const s of servers) await s.server.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const median = (runs: number[]) => [...runs].sort((a, b) => a - b)[Math.floor(runs.length / 2)] ?? 0;
  const on = median(servers.find((s) => s.name === "on")?.runs ?? []);
  const off = median(servers.find((s) => s.name === "off")?.runs ?? []);
  console.log(
    `wayfind serve (${runtime}), SearchTools over gRPC, ${IN_FLIGHT} in flight; load ${loadavg()[0]?.toFixed(1)}`,
  );
  for (const s of servers)
    console.log(
      `metrics ${s.name.padEnd(3)}  median ${median(s.runs).toFixed(0)} calls/s  (runs ${s.runs.map((r) => r.toFixed(0)).join(", ")})`,
    );
  console.log(
    `metrics on keeps ${((100 * on) / off).toFixed(1)} % of the throughput with metrics off (target ≥ 97 %)`,
  );
}

await main();
