import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { clientWith } from "../support/auth.ts";
import { runCli } from "../support/cli.ts";
import { fleetForFile, startReplica, type TestReplica, usageEvents } from "../support/replicas.ts";

// Issue 17, the log's retention (docs/replicas.md "Compaction"): replicas that snapshot their copy into
// PostgreSQL and compact the shared log behind it, and replicas that start from the snapshot.
let configDir: string;
let configFile: string;
beforeAll(() => {
  configDir = mkdtempSync(join(tmpdir(), "wayfind-replica-compaction-"));
  configFile = join(configDir, "wayfind.yaml");
  writeFileSync(
    configFile,
    stringify({
      storage: {
        postgres: {
          url: "postgres://replaced-by-WAYFIND_DATABASE_URL/wayfind",
          compaction: { every_changes: 25, check_interval_seconds: 0.2, replica_timeout_seconds: 3 },
        },
      },
    }),
  );
});
afterAll(() => {
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});
// Registered after the hooks above: the replicas start once the config exists.
const { fleet, unavailable } = fleetForFile(2, { config: () => configFile });
const { replicas } = fleet;

let pool: pg.Pool;
beforeAll(() => {
  if (!unavailable) pool = new pg.Pool({ connectionString: fleet.postgres.url, max: 2 });
});
afterAll(async () => {
  await pool?.end();
});

async function logBounds(): Promise<{ oldest: number; head: number; snapshot: number }> {
  const { rows } = await pool.query<{ oldest: string; head: string; snapshot: string }>(
    `SELECT coalesce(min(seq), 0) AS oldest, coalesce(max(seq), 0) AS head,
       (SELECT coalesce(max(seq), 0) FROM wayfind_snapshots) AS snapshot FROM wayfind_changes`,
  );
  const row = rows[0];
  return { oldest: Number(row?.oldest), head: Number(row?.head), snapshot: Number(row?.snapshot) };
}

async function eventually(what: string, done: () => Promise<boolean>, ms = 20_000): Promise<void> {
  for (const deadline = Date.now() + ms; !(await done()); await sleep(100))
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
}

/** Writes `count` usage records for `tenantId`, alternating between the running replicas given. */
async function recordUsage(on: readonly TestReplica[], tenantId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await (on[i % on.length] as TestReplica).grpc(UsageService).recordUsage({
      caller: { tenantId },
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage: { inputTokens: 100n, outputTokens: 10n, cacheReadInputTokens: 0n, cacheCreationInputTokens: 0n },
      idempotencyKey: `${tenantId}-${i}`,
    });
  }
}

async function callsOf(replica: TestReplica, tenantId: string): Promise<bigint | undefined> {
  const summary = await replica.grpc(UsageService).getUsageSummary({ caller: { tenantId } });
  return summary.totals?.calls;
}

/** Waits until the log no longer holds change `seq`: whoever needs it must take it from a snapshot. */
const compactedPast = (seq: number) =>
  eventually(`the log compacted past change ${seq}`, async () => (await logBounds()).oldest > seq);

/** The pid of the replica process holding the compaction lease (connections are named wayfind@host:pid). */
async function compactionLeaseHolder(): Promise<number | undefined> {
  const { rows } = await pool.query<{ application_name: string }>(
    `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted
       AND ((l.classid::text::bigint << 32) | l.objid::text::bigint) = hashtextextended('wayfind:lease:log-compaction', 0)`,
  );
  const pid = rows[0]?.application_name.match(/:(\d+)$/)?.[1];
  return pid === undefined ? undefined : Number(pid);
}

const isRunning = (replica: TestReplica) =>
  replica.run.child.exitCode === null && replica.run.child.signalCode === null;

/** A search on `replica`, and whether its answer said it was served stale. */
async function searchStale(replica: TestReplica): Promise<string | null> {
  let stale: string | null = null;
  await replica
    .grpc(ToolDiscoveryService)
    .searchTools(
      { caller: { tenantId: "acme" }, query: "refund an invoice" },
      { onHeader: (headers) => (stale = headers.get("wayfind-stale")) },
    );
  return stale;
}

describe.skipIf(unavailable)(
  `replicas compacting their shared log${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("keep the shared log bounded: changes a snapshot holds and every replica applied are deleted", async () => {
      await recordUsage(replicas, "acme", 120);
      await eventually("a snapshot and a compacted log", async () => {
        const { oldest, head, snapshot } = await logBounds();
        return snapshot >= 100 && head - oldest < 50;
      });
      const { rows } = await pool.query("SELECT count(*)::int AS snapshots FROM wayfind_snapshots");
      expect(rows).toEqual([{ snapshots: 1 }]);
      for (const replica of replicas) expect(await callsOf(replica, "acme")).toBe(120n);
    });

    it("start a new replica from the snapshot: it answers as the others do and resumes their cursors", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      await a.grpc(ToolDiscoveryService).registerTools({
        caller: { tenantId: "acme" },
        source: "billing",
        namespace: "billing",
        tools: [{ name: "refund_invoice", description: "Refund a paid invoice to the customer's card." }],
      });
      await recordUsage([a, b], "globex", 6);
      const { head: registered } = await logBounds();
      await recordUsage([a, b], "initech", 60);
      await compactedPast(registered);

      const c = await startReplica(fleet.postgres.url, undefined, { config: configFile });
      replicas.push(c);
      const found = await c
        .grpc(ToolDiscoveryService)
        .searchTools({ caller: { tenantId: "acme" }, query: "refund an invoice", includeAlwaysLoaded: true });
      expect(found.tools.map((tool) => tool.name)).toContain("billing.refund_invoice");
      expect(await callsOf(c, "globex")).toBe(6n);
      expect(await callsOf(c, "initech")).toBe(60n);
      const onA = await usageEvents(a, "globex", 6);
      expect(await usageEvents(c, "globex", 6)).toEqual(onA);
      const cursor = onA[2]?.id ?? 0n;
      expect(await usageEvents(c, "globex", 3, cursor)).toEqual(onA.slice(3));
    });

    it("restore the copy of a replica away longer than the replica timeout, with the fleet's API keys made meanwhile", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      await b.stop();
      const created = runCli(["keys", "create", "--tenant", "acme", "--role", "agent"], {
        WAYFIND_DATABASE_URL: fleet.postgres.url,
      });
      const secret: string[] = [];
      created.child.stdout.on("data", (chunk: Buffer) => secret.push(chunk.toString()));
      expect(await created.exited).toBe(0);
      const { head: stoppedAt } = await logBounds();
      await recordUsage([a], "umbrella", 60);
      await compactedPast(stoppedAt + 1);

      const restarted = await startReplica(fleet.postgres.url, b.dataDir, { config: configFile });
      replicas[1] = restarted;
      expect(await callsOf(restarted, "umbrella")).toBe(60n);
      expect(await callsOf(restarted, "acme")).toBe(120n);
      // The key came with the snapshot (as its SHA-256): the restored replica accepts it.
      const found = await clientWith(
        ToolDiscoveryService,
        `http://127.0.0.1:${restarted.port}`,
        secret.join("").trim(),
      ).searchTools({ caller: { tenantId: "acme" }, query: "refund an invoice" });
      expect(found).toBeDefined();
      const copy = new Database(join(b.dataDir, "wayfind.db"), { readonly: true });
      try {
        expect(copy.prepare("SELECT tenant_id FROM api_keys").all()).toEqual([{ tenant_id: "acme" }]);
      } finally {
        copy.close();
      }
    });

    it("stop a replica frozen past the replica timeout from applying or writing, its reads marked stale, until restarted", async () => {
      const holder = await compactionLeaseHolder();
      expect(holder).toBeDefined();
      const running = replicas.filter(isRunning);
      const frozen = running.find((replica) => replica.run.child.pid !== holder) as TestReplica;
      const writer = running.find((replica) => replica !== frozen) as TestReplica;
      const { head } = await logBounds();
      frozen.run.child.kill("SIGSTOP");
      try {
        await recordUsage([writer], "hooli", 60);
        await compactedPast(head + 1);
      } finally {
        frozen.run.child.kill("SIGCONT");
      }

      await eventually("reads marked stale", async () => (await searchStale(frozen)) === "true");
      const write = recordUsage([frozen], "stranded", 1);
      await expect(write).rejects.toThrow(/unavailable.*restart the replica to restore its copy/i);

      await frozen.stop();
      const restarted = await startReplica(fleet.postgres.url, frozen.dataDir, { config: configFile });
      replicas[replicas.indexOf(frozen)] = restarted;
      expect(await callsOf(restarted, "hooli")).toBe(60n);
      expect(await searchStale(restarted)).toBeNull();
    });
  },
);
