/**
 * What telemetry costs: SearchTools throughput over native gRPC (16 calls in flight from one client,
 * demo catalog) against `wayfind serve` with metrics off, metrics on, and metrics on plus tracing
 * (every call sampled, spans exported over OTLP/HTTP to a local sink that accepts them), each in its
 * own child process, runs interleaved; the median run per setting. Issue 16's target: metrics on keep
 * ≥ 97 % of the throughput with metrics off; tracing at sampling 1.0 is reported.
 * Usage: node --import tsx bench/telemetry-overhead.ts [--seconds S] [--rounds N]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
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
import { IN_FLIGHT, searchToolsLoad } from "./lib/search-load.ts";

async function callsPerSecond(port: number, seconds: number): Promise<number> {
  const client = createClient(
    ToolDiscoveryService,
    createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }),
  );
  return (await searchToolsLoad(client, seconds, { tenantId: "bench" })).length / seconds;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: "string", default: "4" }, rounds: { type: "string", default: "3" } },
  });
  const runtime = await prepareWayfind(ROOT);
  const work = mkdtempSync(join(tmpdir(), "wayfind-metrics-bench-"));
  // A collector stand-in: accepts every OTLP export, so tracing pays for building and sending spans.
  const sink = createServer((request, response) => {
    request.resume();
    request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const traces = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`;
  const settings = {
    "metrics off": { metrics: false, env: {} },
    "metrics on": { metrics: true, env: {} },
    "metrics + tracing": {
      metrics: true,
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: traces, OTEL_TRACES_SAMPLER: "always_on" },
    },
  } as const;
  const servers: { name: string; server: ServerProcess; runs: number[] }[] = [];
  try {
    // One at a time, inside the try: a server that fails to start never leaves the other running.
    for (const [name, { metrics, env }] of Object.entries(settings)) {
      const slug = name.replace(/\W+/g, "-");
      const config = join(work, `${slug}.yaml`);
      writeFileSync(
        config,
        `catalogs: [{path: ${join(ROOT, "demo/catalogs/github.jsonl")}, namespace: github}]\nserver: {metrics: ${metrics}}\n`,
      );
      const server = await spawnServer(wayfindServeArgs(config, join(work, slug)), {
        logFile: join(work, `${slug}.log`),
        env,
      });
      servers.push({ name, server, runs: [] });
    }
    for (const s of servers) await callsPerSecond(s.server.port, 1); // warm-up
    for (let round = 0; round < Number(values.rounds); round++)
      for (const s of servers) s.runs.push(await callsPerSecond(s.server.port, Number(values.seconds)));
  } finally {
    for (const s of servers) await s.server.stop();
    sink.close();
    rmSync(work, { recursive: true, force: true });
  }
  const median = (runs: number[]) => [...runs].sort((a, b) => a - b)[Math.floor(runs.length / 2)] ?? 0;
  const rate = (name: string) => median(servers.find((s) => s.name === name)?.runs ?? []);
  const off = rate("metrics off");
  console.log(
    `wayfind serve (${runtime}), SearchTools over gRPC, ${IN_FLIGHT} in flight; load ${loadavg()[0]?.toFixed(1)}`,
  );
  for (const s of servers)
    console.log(
      `${s.name.padEnd(18)} median ${median(s.runs).toFixed(0)} calls/s (${((100 * median(s.runs)) / off).toFixed(1)} % of metrics off; runs ${s.runs.map((r) => r.toFixed(0)).join(", ")})`,
    );
  console.log("target: metrics on ≥ 97 % of metrics off; tracing at sampling 1.0 reported");
}

await main();
