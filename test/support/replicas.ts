import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll } from "vitest";
import type { Event } from "../../gen/ts/wayfind/v1/events_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { type CliRun, listeningPort, runCli } from "./cli.ts";
import { postgresUnavailable, startPostgres, type TestPostgres } from "./postgres.ts";

/** One `wayfind serve` process of a fleet sharing a PostgreSQL database (storage.postgres). */
export interface TestReplica {
  readonly run: CliRun;
  readonly port: number;
  readonly dataDir: string;
  /** A generated client over native gRPC to this replica. */
  grpc<S extends DescService>(service: S): Client<S>;
  /** SIGTERM, and waits for the exit; the data dir stays for a restart. */
  stop(): Promise<void>;
}

/**
 * Starts `wayfind serve` as a child process, the way an operator runs a replica: its own data dir
 * (a fresh one unless given, to restart a replica on its copy), WAYFIND_DATABASE_URL, and the demo
 * config unless another is given.
 */
export async function startReplica(
  databaseUrl: string,
  dataDir?: string,
  options: { config?: string } = {},
): Promise<TestReplica> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), "wayfind-replica-"));
  const config = options.config ? ["--config", options.config] : [];
  const run = runCli(["serve", ...config, "--port", "0", "--data-dir", dir], {
    WAYFIND_DATABASE_URL: databaseUrl,
  });
  const port = await listeningPort(run);
  if (port === 0) {
    const code = await run.exited;
    throw new Error(`wayfind serve exited (${code}) before listening:\n${run.stderr.join("")}`);
  }
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    run,
    port,
    dataDir: dir,
    grpc: (service) => createClient(service, createGrpcTransport({ baseUrl })),
    async stop() {
      if (run.child.exitCode !== null || run.child.signalCode !== null) return;
      run.child.kill("SIGTERM");
      await run.exited;
    },
  };
}

/** Kills what is still running and deletes the data dirs. */
export async function removeReplicas(replicas: readonly TestReplica[]): Promise<void> {
  for (const replica of replicas) {
    if (replica.run.child.exitCode === null && replica.run.child.signalCode === null)
      replica.run.child.kill("SIGKILL");
    await replica.run.exited;
    rmSync(replica.dataDir, { recursive: true, force: true });
  }
}

/** A PostgreSQL and the replicas on it, for one test file. */
export interface TestFleet {
  readonly postgres: TestPostgres;
  /** Replace an entry when a test restarts a replica, so the file's teardown finds it. */
  readonly replicas: TestReplica[];
}

/**
 * Starts a PostgreSQL and `count` replicas before the file's tests (after the hooks registered
 * before this call) and removes them after. `unavailable` says why PostgreSQL cannot run here.
 */
export function fleetForFile(
  count: number,
  options: { config?: () => string } = {},
): { readonly fleet: TestFleet; readonly unavailable: string | undefined } {
  const unavailable = postgresUnavailable();
  let postgres: TestPostgres | undefined;
  const replicas: TestReplica[] = [];
  const fleet: TestFleet = {
    get postgres() {
      if (postgres === undefined) throw new Error("the fleet is started in beforeAll");
      return postgres;
    },
    replicas,
  };
  beforeAll(async () => {
    if (unavailable) return;
    const started = await startPostgres();
    postgres = started;
    const config = options.config?.();
    replicas.push(
      ...(await Promise.all(
        Array.from({ length: count }, () => startReplica(started.url, undefined, config ? { config } : {})),
      )),
    );
  }, 60_000);
  afterAll(async () => {
    await removeReplicas(replicas);
    await postgres?.stop();
  });
  return { fleet, unavailable };
}

/** `count` events of `replica`'s WatchUsageEvents for `tenantId`, after event `afterId` (0: from the oldest). */
export async function usageEvents(
  replica: TestReplica,
  tenantId: string,
  count: number,
  afterId = 0n,
): Promise<Event[]> {
  const abort = new AbortController();
  const events: Event[] = [];
  const stream = replica
    .grpc(UsageService)
    .watchUsageEvents(
      { caller: { tenantId }, filter: afterId === 0n ? { fromOldest: true } : { afterId } },
      { signal: abort.signal, timeoutMs: 10_000 },
    );
  for await (const message of stream) {
    if (message.message.case === "event") events.push(message.message.value);
    if (events.length === count) break;
  }
  abort.abort();
  return events;
}
