import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { fleetForFile, startReplica, type TestReplica, usageEvents } from "../support/replicas.ts";

// The usage ledger of a fleet lives in the shared PostgreSQL (docs/replicas.md "The usage ledger").
const { fleet, unavailable } = fleetForFile(2);
const { replicas } = fleet;
const DAY_MS = 86_400_000;
const ROOT = new URL("../../", import.meta.url).pathname;

function recordRequest(tenantId: string, key: string, cacheRead = 0n) {
  return {
    caller: { tenantId, projectId: "billing", userId: "ana", sessionId: "s-1", runId: "r-1" },
    provider: Provider.ANTHROPIC,
    model: "claude-sonnet-4-5",
    usage: {
      inputTokens: 1000n,
      outputTokens: 200n,
      cacheReadInputTokens: cacheRead,
      cacheCreationInputTokens: 0n,
    },
    idempotencyKey: key,
  };
}

async function sql<Row>(text: string, params: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: fleet.postgres.url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as Row[];
  } finally {
    await client.end();
  }
}

function copyRecordCount(replica: TestReplica): number {
  const db = new Database(join(replica.dataDir, "wayfind.db"), { readonly: true });
  try {
    return db.prepare<[], { n: number }>("SELECT count(*) AS n FROM usage_records").get()?.n ?? -1;
  } finally {
    db.close();
  }
}

/** Records `key` through `replica`, retrying while the shared database is away (as a client should). */
async function recordUntilTaken(replica: TestReplica, tenantId: string, key: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      await replica.grpc(UsageService).recordUsage(recordRequest(tenantId, key), { timeoutMs: 5_000 });
      return attempt;
    } catch (error) {
      const code = ConnectError.from(error).code;
      // Anything else is a defect; a replica that died says why on its stderr.
      if (code !== Code.Unavailable && code !== Code.DeadlineExceeded)
        throw new Error(
          `${Code[code]} from the replica; its stderr: ${replica.run.stderr.join("").slice(-2000)}`,
        );
      if (attempt > 200) throw error;
      await sleep(100);
    }
  }
}

describe.skipIf(unavailable)(
  `the usage ledger of replicas on PostgreSQL${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("stores each record once in PostgreSQL and none in the replicas' copies", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      for (let i = 0; i < 4; i++)
        await (i % 2 ? a : b).grpc(UsageService).recordUsage(recordRequest("acme", `once-${i}`, 500n));
      const retry = await b.grpc(UsageService).recordUsage(recordRequest("acme", "once-0", 500n));
      expect(retry.duplicate).toBe(true);

      const [stored] = await sql<{ n: string }>(
        "SELECT count(*) AS n FROM wayfind_usage WHERE tenant_id = 'acme'",
      );
      expect(Number(stored?.n)).toBe(4);
      // The fence of a call brings each copy up to the log's head: the events are there, the records are not.
      for (const replica of replicas) {
        await replica.grpc(UsageService).getUsageSummary({ caller: { tenantId: "acme" } });
        expect(copyRecordCount(replica)).toBe(0);
      }
      const events = await usageEvents(b, "acme", 4);
      expect(events.map((event) => event.type)).toEqual(Array(4).fill("usage_recorded"));
    });

    it("gives people views whose sums match GetUsageSummary: days by project and user, hours, records with their cache hit rate", async () => {
      const [a] = replicas as [TestReplica];
      const summary = await a.grpc(UsageService).getUsageSummary({ caller: { tenantId: "acme" } });
      // Days are kept by project and user too; hours by tenant, provider and model.
      for (const [view, who] of [
        ["wayfind_usage_daily", "AND project_id = 'billing' AND user_id = 'ana'"],
        ["wayfind_usage_hourly", ""],
      ]) {
        const [row] = await sql<{ calls: string; cost: number; input: string; hit: number }>(
          `SELECT sum(calls) AS calls, sum(cost_usd) AS cost, sum(input_tokens) AS input,
             sum(cache_read_input_tokens)::float8 / sum(input_tokens + cache_read_input_tokens) AS hit
           FROM ${view} WHERE tenant_id = 'acme' ${who}`,
        );
        expect(BigInt(row?.calls ?? "0")).toBe(summary.totals?.calls);
        expect(BigInt(row?.input ?? "0")).toBe(summary.totals?.inputTokens);
        expect(row?.cost).toBeCloseTo(summary.totals?.totalCostUsd ?? -1, 9);
        expect(row?.hit).toBeCloseTo(summary.totals?.cacheHitRate ?? -1, 9);
      }
      const [record] = await sql<{ occurred_at: Date; cache_hit_rate: number; provider: string }>(
        "SELECT occurred_at, cache_hit_rate, provider FROM wayfind_usage WHERE tenant_id = 'acme' LIMIT 1",
      );
      expect(record?.occurred_at).toBeInstanceOf(Date);
      expect(record?.cache_hit_rate).toBeCloseTo(500 / 1500, 9);
      expect(record?.provider).toBe("anthropic");
    });

    it("answers every PostgreSQL query of the Grafana dashboard in docs/grafana from the views", async () => {
      const dashboard = JSON.parse(readFileSync(join(ROOT, "docs/grafana/wayfind-usage.json"), "utf8")) as {
        panels: { title: string; targets: { rawSql?: string; expr?: string }[] }[];
        templating: { list: { query: string }[] };
      };
      // Grafana's macros and the tenant variable, as Grafana expands them for the last week and "acme".
      const expand = (text: string) =>
        text
          .replace(/\$__timeFilter\((\w+)\)/g, "$1 BETWEEN now() - interval '7 days' AND now()")
          .replaceAll("$__timeFrom()", "(now() - interval '7 days')")
          .replaceAll("$__timeTo()", "now()")
          .replaceAll("$tenant", "'acme'");
      const queries = [
        ...dashboard.templating.list.map((variable) => variable.query),
        ...dashboard.panels.flatMap((panel) => panel.targets.flatMap((target) => target.rawSql ?? [])),
      ];
      expect(queries.length).toBeGreaterThanOrEqual(6);
      for (const query of queries) expect((await sql(expand(query))).length).toBeGreaterThan(0);
      const promQl = dashboard.panels.flatMap((panel) =>
        panel.targets.flatMap((target) => target.expr ?? []),
      );
      expect(promQl.join(" ")).toMatch(/wayfind_searches_zero_results_total/);
    });

    it("keeps a week of day partitions ready ahead and drops days past retention when a replica starts", async () => {
      const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
      const name = (ms: number) =>
        `wayfind_usage_records_${new Date(ms).toISOString().slice(0, 10).replaceAll("-", "")}`;
      const partitions = async () =>
        (
          await sql<{ name: string }>(
            `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'wayfind_usage_records'::regclass`,
          )
        ).map((row) => row.name);
      const ready = await partitions();
      for (let day = 0; day <= 7; day++) expect(ready).toContain(name(today + day * DAY_MS));

      // A day past the default 30 days' retention, as a fleet that ran then would have left it.
      const old = today - 40 * DAY_MS;
      const oldDate = new Date(old).toISOString().slice(0, 10);
      const nextDate = new Date(old + DAY_MS).toISOString().slice(0, 10);
      await sql(
        `CREATE TABLE ${name(old)} PARTITION OF wayfind_usage_records FOR VALUES FROM ('${oldDate}') TO ('${nextDate}')`,
      );
      const b = replicas[1] as TestReplica;
      await b.stop();
      replicas[1] = await startReplica(fleet.postgres.url, b.dataDir);
      const after = await partitions();
      expect(after).not.toContain(name(old));
      expect(after).toContain(name(today));
    });

    it("counts a burst once through a PostgreSQL restart, the failed calls retried with their keys", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      const keys = Array.from({ length: 120 }, (_, i) => `burst-${i}`);
      const burst = Promise.all(
        keys.map(async (key, i) => {
          await sleep(i * 5);
          return recordUntilTaken(i % 2 ? a : b, "initech", key);
        }),
      );
      await sleep(200);
      fleet.postgres.pause();
      await sleep(500);
      fleet.postgres.resume();
      const attempts = await burst;
      expect(attempts.some((n) => n > 1)).toBe(true); // some calls met the outage and were retried

      const summary = await a.grpc(UsageService).getUsageSummary({ caller: { tenantId: "initech" } });
      expect(summary.totals?.calls).toBe(BigInt(keys.length));
      const [stored] = await sql<{ n: string }>(
        "SELECT count(*) AS n FROM wayfind_usage WHERE tenant_id = 'initech'",
      );
      expect(Number(stored?.n)).toBe(keys.length);
      const events = await usageEvents(b, "initech", keys.length);
      const recordIds = new Set(events.map((event) => event.attributes?.record_id));
      expect(recordIds.size).toBe(keys.length);
    }, 90_000);
  },
);
