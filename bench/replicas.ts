/**
 * Several replicas on one PostgreSQL (issue 17, docs/replicas.md "Running several replicas"): what sharing the
 * state costs and what more replicas buy on this machine.
 *
 * - One replica: SQLite alone vs on PostgreSQL — SearchTools (read: in memory, plus the read fence on
 *   PostgreSQL), ResolveTool activating a deferred tool for a new run per call, and RecordUsage (both
 *   writes: through the change log on PostgreSQL).
 * - 1, 2 and 3 replicas on one PostgreSQL, load spread evenly (one ghz per replica): throughput and
 *   the scaling ratio over one replica.
 * - Propagation across replicas: a tool registered on A found by a search on B, a tool activated on
 *   A seen as active by B, a usage event recorded on A delivered to a watch stream on B, and an API
 *   key created (then revoked) through A accepted (then refused) by B and C (p50 / p99).
 *
 * Starts its own PostgreSQL (test/support/postgres.ts) and `wayfind serve` processes with the demo
 * catalog. Load comes from ghz (bench/setup.sh installs it). Figures depend on the cores: with two,
 * the servers, PostgreSQL and ghz share them.
 *
 * Usage: node --import tsx bench/replicas.ts [--seconds S] [--propagation N] [--keys-only]
 * (--keys-only: three replicas and the API keys' propagation alone, no load)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Provider, SearchType } from "../gen/ts/wayfind/v1/common_pb.ts";
import { KeyService } from "../gen/ts/wayfind/v1/keys_pb.ts";
import { ActivationScope, ToolDiscoveryService } from "../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../gen/ts/wayfind/v1/usage_pb.ts";
import { startPostgres, type TestPostgres } from "../test/support/postgres.ts";
import { WORKLOADS, type Workload } from "./lib/fleet-workloads.ts";
import {
  ensureGhz,
  type LoadResult,
  prepareWayfind,
  printAligned,
  ROOT,
  runWithServerCpu,
  type ServerProcess,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";
import { percentile } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    propagation: { type: "string", default: "100" },
    "keys-only": { type: "boolean", default: false },
  },
});
const SECONDS = Number(values.seconds);
const PROPAGATION_SAMPLES = Number(values.propagation);
/** Calls in flight against the fleet, split evenly over its replicas. */
const IN_FLIGHT = 24;
const CONFIG = join(ROOT, "demo", "wayfind.yaml");

const scratch = mkdtempSync(join(tmpdir(), "wayfind-bench-replicas-"));
const started: ServerProcess[] = [];

async function startFleet(count: number, databaseUrl: string | undefined): Promise<ServerProcess[]> {
  const fleet = await Promise.all(
    Array.from({ length: count }, (_, i) => {
      const dataDir = mkdtempSync(join(scratch, "data-"));
      return spawnServer(wayfindServeArgs(CONFIG, dataDir), {
        logFile: join(scratch, `replica-${started.length + i}.log`),
        env: databaseUrl ? { WAYFIND_DATABASE_URL: databaseUrl } : {},
      });
    }),
  );
  started.push(...fleet);
  return fleet;
}

async function stopFleet(fleet: readonly ServerProcess[]): Promise<void> {
  await Promise.all(fleet.map((server) => server.stop()));
}

let rounds = 0;
/**
 * The workload on every replica at once (IN_FLIGHT split over them); each result carries its
 * replica's CPU over the run (serverCpuPct, share of one core).
 */
async function loadFleet(
  ghz: string,
  fleet: readonly ServerProcess[],
  workload: Workload,
): Promise<LoadResult[]> {
  const round = `r${rounds++}`;
  const perReplica = Math.max(1, Math.round(IN_FLIGHT / fleet.length));
  return Promise.all(
    fleet.map(async (server) => {
      const { result } = await runWithServerCpu(ghz, server, {
        proto: workload.proto,
        call: workload.call,
        data: workload.data(round),
        connections: Math.min(4, perReplica),
        streams: Math.ceil(perReplica / Math.min(4, perReplica)),
        durationS: SECONDS,
      });
      return result;
    }),
  );
}

function summed(results: readonly LoadResult[]) {
  return {
    rps: results.reduce((sum, r) => sum + r.rps, 0),
    p50: Math.max(...results.map((r) => r.p50Ms)),
    p99: Math.max(...results.map((r) => r.p99Ms)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    /** Every replica's CPU together, in cores. */
    cpu: results.reduce((sum, r) => sum + (r.serverCpuPct ?? 0), 0) / 100,
  };
}

const fmt = (n: number, digits = 1) => n.toLocaleString("en-US", { maximumFractionDigits: digits });

async function propagation(fleet: readonly ServerProcess[]) {
  const [a, b] = fleet as [ServerProcess, ServerProcess];
  const tools = (server: ServerProcess) =>
    createClient(ToolDiscoveryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.port}` }));
  const usage = (server: ServerProcess) =>
    createClient(UsageService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.port}` }));
  const registered: number[] = [];
  const activated: number[] = [];
  const delivered: number[] = [];
  const abort = new AbortController();
  // The watch sees this tenant's usage events only, in order: the i-th is the i-th record's.
  const arrivals: number[] = [];
  let watchOpen: () => void = () => {};
  const opened = new Promise<void>((resolve) => (watchOpen = resolve));
  const watching = (async () => {
    try {
      for await (const message of usage(b).watchUsageEvents(
        { caller: { tenantId: "propagation" } },
        { signal: abort.signal },
      )) {
        if (message.message.case === "status") watchOpen();
        if (message.message.case === "event") arrivals.push(performance.now());
      }
    } catch {
      // aborted at the end
    }
  })();
  await opened;
  for (let i = 0; i < PROPAGATION_SAMPLES; i++) {
    const name = `probe_${i}`;
    let start = performance.now();
    await tools(a).registerTools({
      caller: { tenantId: "propagation" },
      source: `probe-${i}`,
      namespace: "probe",
      tools: [{ name, description: `Probe tool number ${i} for the propagation bench.` }],
    });
    const found = await tools(b).searchTools({
      caller: { tenantId: "propagation" },
      query: `probe.${name}`,
      searchType: SearchType.EXACT,
    });
    if (!found.tools.some((tool) => tool.name === `probe.${name}`)) throw new Error(`${name} not found on B`);
    registered.push(performance.now() - start);

    start = performance.now();
    const caller = { tenantId: "acme", sessionId: `propagation-${i}` };
    await tools(a).activateTools({ caller, names: ["github.list_issues"], scope: ActivationScope.SESSION });
    const resolved = await tools(b).resolveTool({ caller, name: "github.list_issues" });
    if (resolved.activated) throw new Error("B did not see A's activation");
    activated.push(performance.now() - start);

    start = performance.now();
    await usage(a).recordUsage({
      caller: { tenantId: "propagation" },
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage: { inputTokens: 10n, outputTokens: 1n, cacheReadInputTokens: 0n, cacheCreationInputTokens: 0n },
      idempotencyKey: `propagation-${i}`,
    });
    for (let waited = 0; arrivals.length <= i; waited++) {
      if (waited > 5_000) throw new Error(`usage event ${i + 1} never reached B`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    delivered.push((arrivals[i] ?? start) - start);
  }
  abort.abort();
  await watching;
  return [
    percentileRow("tool registered on A → found by a search on B", registered),
    percentileRow("tool activated on A → active for ResolveTool on B", activated),
    percentileRow("usage recorded on A → event delivered to a watch on B", delivered),
  ];
}

/** The operator of the demo's loopback server (no credentials needed there): the development role header. */
const asOperator: Interceptor = (next) => (request) => {
  request.header.set("wayfind-role", "admin");
  return next(request);
};

/**
 * API keys across three replicas: from the CreateApiKey call on A until B and C both accept the key,
 * and from the RevokeApiKey call on A until both refuse it (each replica asked once right after: the
 * fence makes that call see the change, so the figure is the write plus one call).
 */
async function keyPropagation(fleet: readonly ServerProcess[]) {
  const [a, ...others] = fleet as [ServerProcess, ...ServerProcess[]];
  const keys = createClient(
    KeyService,
    createGrpcTransport({ baseUrl: `http://127.0.0.1:${a.port}`, interceptors: [asOperator] }),
  );
  const searchWith = (server: ServerProcess, secret: string) =>
    createClient(
      ToolDiscoveryService,
      createGrpcTransport({
        baseUrl: `http://127.0.0.1:${server.port}`,
        interceptors: [
          (next) => (request) => {
            request.header.set("authorization", `Bearer ${secret}`);
            return next(request);
          },
        ],
      }),
    ).searchTools({ query: "probe", searchType: SearchType.EXACT });
  /** Until every other replica answers `accepted` (true: the call passes; false: UNAUTHENTICATED). */
  const untilEverywhere = async (secret: string, accepted: boolean) => {
    for (const server of others)
      for (let tries = 0; ; tries++) {
        const passed = await searchWith(server, secret).then(
          () => true,
          (error: unknown) => {
            if (ConnectError.from(error).code !== Code.Unauthenticated) throw error;
            return false;
          },
        );
        if (passed === accepted) break;
        if (tries > 500) throw new Error(`key never ${accepted ? "accepted" : "refused"} on :${server.port}`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
  };
  const created: number[] = [];
  const revoked: number[] = [];
  for (let i = 0; i < PROPAGATION_SAMPLES; i++) {
    let start = performance.now();
    const { secret } = await keys.createApiKey({
      id: `propagation-${i}`,
      tenantId: "acme",
      roles: ["agent"],
    });
    await untilEverywhere(secret, true);
    created.push(performance.now() - start);
    start = performance.now();
    await keys.revokeApiKey({ id: `propagation-${i}`, tenantId: "acme" });
    await untilEverywhere(secret, false);
    revoked.push(performance.now() - start);
  }
  return [
    percentileRow(`key created on A → accepted on all ${others.length} others`, created),
    percentileRow(`key revoked on A → refused on all ${others.length} others`, revoked),
  ];
}

function percentileRow(label: string, samples: number[]): string[] {
  const sorted = [...samples].sort((x, y) => x - y);
  return [label, fmt(percentile(sorted, 50), 2), fmt(percentile(sorted, 99), 2)];
}

/** One replica on SQLite and on PostgreSQL, 1–3 replicas under load, then propagation across three. */
async function throughputAndPropagation(ghz: string, databaseUrl: string): Promise<void> {
  const single: string[][] = [];
  for (const [storage, url] of [
    ["SQLite alone", undefined],
    ["PostgreSQL", databaseUrl],
  ] as const) {
    const fleet = await startFleet(1, url);
    for (const workload of WORKLOADS) {
      const result = summed(await loadFleet(ghz, fleet, workload));
      single.push([
        workload.label,
        storage,
        fmt(result.rps, 0),
        fmt(result.p50, 2),
        fmt(result.p99, 2),
        fmt(result.cpu, 2),
        String(result.errors),
      ]);
    }
    await stopFleet(fleet);
  }
  console.log("One replica: SQLite alone vs on PostgreSQL");
  printAligned(
    ["call", "storage", "req/s", "p50 ms", "p99 ms", "server cores", "errors"],
    single,
    new Set([2, 3, 4, 5, 6]),
  );

  const scaling: string[][] = [];
  const base = new Map<string, number>();
  let lastFleet: ServerProcess[] = [];
  for (const count of [1, 2, 3]) {
    const fleet = await startFleet(count, databaseUrl);
    for (const workload of WORKLOADS.slice(0, 2)) {
      const result = summed(await loadFleet(ghz, fleet, workload));
      if (count === 1) base.set(workload.label, result.rps);
      const ratio = result.rps / (base.get(workload.label) ?? result.rps);
      scaling.push([
        workload.label,
        String(count),
        fmt(result.rps, 0),
        `${fmt(ratio, 2)}×`,
        fmt(result.p50, 2),
        fmt(result.p99, 2),
        fmt(result.cpu, 2),
        String(result.errors),
      ]);
    }
    if (count < 3) await stopFleet(fleet);
    else lastFleet = fleet;
  }
  console.log("\nReplicas on one PostgreSQL, load spread evenly");
  printAligned(
    ["call", "replicas", "req/s", "vs 1", "p50 ms", "p99 ms", "server cores", "errors"],
    scaling,
    new Set([1, 2, 3, 4, 5, 6, 7]),
  );
  console.log(`(${availableParallelism()} cores here, shared by the replicas, PostgreSQL and ghz)`);

  console.log(`\nPropagation across replicas (${PROPAGATION_SAMPLES} samples; from A's call to B's answer)`);
  printAligned(
    ["what", "p50 ms", "p99 ms"],
    [...(await propagation(lastFleet)), ...(await keyPropagation(lastFleet))],
    new Set([1, 2]),
  );
  await stopFleet(lastFleet);
}

let postgres: TestPostgres | undefined;
try {
  await prepareWayfind(ROOT);
  const ghz = await ensureGhz();
  postgres = await startPostgres();
  console.log(
    `replicas bench: ${SECONDS} s per run, ${IN_FLIGHT} calls in flight, PostgreSQL from ${postgres.binaries}\n`,
  );

  if (values["keys-only"]) {
    const fleet = await startFleet(3, postgres.url);
    console.log(
      `API keys across 3 replicas (${PROPAGATION_SAMPLES} samples; from A's call to every other's answer)`,
    );
    printAligned(["what", "p50 ms", "p99 ms"], await keyPropagation(fleet), new Set([1, 2]));
    await stopFleet(fleet);
  } else await throughputAndPropagation(ghz, postgres.url);
} finally {
  await Promise.all(started.map((server) => server.stop()));
  await postgres?.stop();
  rmSync(scratch, { recursive: true, force: true });
}
