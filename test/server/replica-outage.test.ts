import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/ts/grpc/health/v1/health_pb.ts";
import { Provider, SemanticStatus, SemanticTier } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { fleetForFile, type TestReplica } from "../support/replicas.ts";

// Degraded mode (docs/replicas.md): two replicas lose their shared PostgreSQL, then get it back.
const { fleet, unavailable } = fleetForFile(2);
const { replicas } = fleet;

const caller = { tenantId: "acme" };
const record = (key: string) => ({
  caller,
  provider: Provider.ANTHROPIC,
  model: "claude-sonnet-4-5",
  usage: { inputTokens: 10n, outputTokens: 1n, cacheReadInputTokens: 0n, cacheCreationInputTokens: 0n },
  idempotencyKey: key,
});

/** A search's hits, whether the answer said it was served stale, and how far (and by which tier) meaning took part. */
async function search(replica: TestReplica) {
  let stale: string | null = null;
  const found = await replica
    .grpc(ToolDiscoveryService)
    .searchTools(
      { caller, query: "create an issue" },
      { onHeader: (headers) => (stale = headers.get("wayfind-stale")) },
    );
  return {
    names: found.tools.map((tool) => tool.name),
    stale,
    semantic: found.semanticStatus,
    tier: found.semanticTier,
  };
}

function pick<T extends object, K extends keyof T>(value: T, ...keys: K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((key) => [key, value[key]])) as Pick<T, K>;
}

async function writesStatus(replica: TestReplica) {
  return (await replica.grpc(Health).check({ service: "wayfind.writes" })).status;
}

describe.skipIf(unavailable)(
  `replicas whose PostgreSQL goes away${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("answer searches from their copy marked stale, refuse writes, report it, and recover when it returns", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      // The demo's MCP server's tools arrive after its catalog files (one replica syncs them, the
      // other applies the change), and every tool's vector is computed after that: until every vector
      // is ready and the model reads the request, a ranking may still change.
      await expect
        .poll(
          async () =>
            (await b.grpc(ToolDiscoveryService).listToolSources({ caller })).sources.some(
              (source) => source.name.includes("workspace") && source.toolCount > 0,
            ),
          { timeout: 30_000 },
        )
        .toBe(true);
      await expect
        .poll(async () => pick(await search(b), "semantic", "tier"), { timeout: 30_000 })
        .toEqual({ semantic: SemanticStatus.READY, tier: SemanticTier.MODEL });
      const before = await search(b);
      expect(before.names).toContain("github.create_issue");
      expect(before.stale).toBeNull();
      expect(await writesStatus(a)).toBe(ServingStatus.SERVING);

      fleet.postgres.pause();
      const during = await search(b);
      expect(during).toEqual({
        names: before.names,
        stale: "true",
        semantic: SemanticStatus.READY,
        tier: SemanticTier.MODEL,
      });
      await expect(a.grpc(UsageService).recordUsage(record("during-outage"))).rejects.toMatchObject({
        code: Code.Unavailable,
      });
      expect(await writesStatus(a)).toBe(ServingStatus.NOT_SERVING);
      expect(await writesStatus(b)).toBe(ServingStatus.NOT_SERVING);
      const ready = await fetch(`http://127.0.0.1:${a.port}/readyz`);
      expect(ready.status).toBe(200); // reads go on: a load balancer keeps sending them
      expect(await ready.json()).toMatchObject({ checks: { writes: "unavailable" } });
      expect((await fetch(`http://127.0.0.1:${a.port}/readyz/writes`)).status).toBe(503);
      expect(await (await fetch(`http://127.0.0.1:${a.port}/metrics`)).text()).toMatch(
        /^wayfind_replica_shared_database_up 0$/m,
      );

      fleet.postgres.resume();
      for (let waited = 0; (await writesStatus(a)) !== ServingStatus.SERVING; waited += 100) {
        if (waited > 15_000) throw new Error("replica a did not leave degraded mode within 15 s");
        await sleep(100);
      }
      await a.grpc(UsageService).recordUsage(record("after-outage"));
      for (let waited = 0; (await writesStatus(b)) !== ServingStatus.SERVING; waited += 100) {
        if (waited > 15_000) throw new Error("replica b did not leave degraded mode within 15 s");
        await sleep(100);
      }
      const summary = await b.grpc(UsageService).getUsageSummary({ caller });
      expect(summary.totals?.calls).toBe(1n);
      expect((await search(b)).stale).toBeNull();
      expect((await fetch(`http://127.0.0.1:${a.port}/readyz/writes`)).status).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${b.port}/metrics`)).text();
      expect(metrics).toMatch(/^wayfind_replica_shared_database_up 1$/m);
      expect(Number(/^wayfind_replica_applied_change (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    }, 60_000);
  },
);
