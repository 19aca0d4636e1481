import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillScope, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { ActivationScope, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { fleetForFile, startReplica, type TestReplica, usageEvents } from "../support/replicas.ts";
import { startTestServer } from "../support/server.ts";

// Three `wayfind serve` processes on one real PostgreSQL (docs/replicas.md), called with generated clients.
const { fleet, unavailable } = fleetForFile(3);
const { replicas } = fleet;

const usage = {
  inputTokens: 1000n,
  outputTokens: 200n,
  cacheReadInputTokens: 0n,
  cacheCreationInputTokens: 0n,
};

function recordRequest(tenantId: string, key: string) {
  return {
    caller: { tenantId, sessionId: "s-1", runId: "r-1" },
    provider: Provider.ANTHROPIC,
    model: "claude-sonnet-4-5",
    usage,
    idempotencyKey: key,
  };
}

describe.skipIf(unavailable)(
  `three replicas on one PostgreSQL${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("count a usage record sent to one replica in every replica's summary on the next call", async () => {
      const [a, b, c] = replicas as [TestReplica, TestReplica, TestReplica];
      await a.grpc(UsageService).recordUsage(recordRequest("acme", "read-your-writes"));
      for (const replica of [b, c, a]) {
        const summary = await replica.grpc(UsageService).getUsageSummary({ caller: { tenantId: "acme" } });
        expect(summary.totals?.calls).toBe(1n);
      }
    });

    it("count an idempotency key sent to all three at once exactly once", async () => {
      const keys = Array.from({ length: 20 }, (_, i) => `raced-${i}`);
      const answers = await Promise.all(
        keys.flatMap((key) =>
          replicas.map((replica) => replica.grpc(UsageService).recordUsage(recordRequest("initech", key))),
        ),
      );
      expect(answers.filter((answer) => !answer.duplicate)).toHaveLength(keys.length);
      for (const replica of replicas) {
        const summary = await replica.grpc(UsageService).getUsageSummary({ caller: { tenantId: "initech" } });
        expect(summary.totals?.calls).toBe(BigInt(keys.length));
      }
      const events = await usageEvents(replicas[2] as TestReplica, "initech", keys.length);
      expect(events.every((event) => event.type === "usage_recorded")).toBe(true);
    });

    it("deliver the same events under the same ids on every replica, and a cursor from one resumes on another", async () => {
      const [a, b, c] = replicas as [TestReplica, TestReplica, TestReplica];
      for (const [i, replica] of [a, b, c, a, b, c].entries())
        await replica.grpc(UsageService).recordUsage(recordRequest("globex", `spread-${i}`));
      const seen = await Promise.all(replicas.map((replica) => usageEvents(replica, "globex", 6)));
      const ids = seen.map((events) => events.map((event) => event.id));
      expect(ids[1]).toEqual(ids[0]);
      expect(ids[2]).toEqual(ids[0]);
      expect(seen[1]).toEqual(seen[0]);

      const cursor = ids[0]?.[2] ?? 0n;
      const resumed = await usageEvents(b, "globex", 3, cursor);
      expect(resumed.map((event) => event.id)).toEqual(ids[0]?.slice(3));
    });

    it("deliver a search reported by one replica to watchers of another", async () => {
      const [a, , c] = replicas as [TestReplica, TestReplica, TestReplica];
      const abort = new AbortController();
      const stream = c
        .grpc(ToolDiscoveryService)
        .watchToolEvents(
          { caller: { tenantId: "hooli" }, filter: { types: ["tool_search_query"] } },
          { signal: abort.signal, timeoutMs: 10_000 },
        );
      const iterator = stream[Symbol.asyncIterator]();
      const first = await iterator.next(); // the status: watching from now
      expect(first.value?.message.case).toBe("status");
      await a.grpc(ToolDiscoveryService).searchTools({ caller: { tenantId: "hooli" }, query: "weather" });
      let next = await iterator.next();
      while (next.value?.message.case !== "event") next = await iterator.next();
      abort.abort();
      expect(next.value.message.value).toMatchObject({ type: "tool_search_query", tenantId: "hooli" });
    });

    it("catch up a stopped replica with what the others recorded meanwhile", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      await b.stop();
      for (let i = 0; i < 5; i++)
        await a.grpc(UsageService).recordUsage(recordRequest("umbrella", `while-down-${i}`));
      const restarted = await startReplica(fleet.postgres.url, b.dataDir);
      replicas[1] = restarted;
      const summary = await restarted
        .grpc(UsageService)
        .getUsageSummary({ caller: { tenantId: "umbrella" } });
      expect(summary.totals?.calls).toBe(5n);
    });

    it("show a tool activated through one replica as active through the others on their next call", async () => {
      const [a, b, c] = replicas as [TestReplica, TestReplica, TestReplica];
      const caller = { tenantId: "acme", sessionId: "visible-elsewhere" };
      const activated = await a
        .grpc(ToolDiscoveryService)
        .activateTools({ caller, names: ["github.create_issue"], scope: ActivationScope.SESSION });
      expect(activated.activated).toEqual(["github.create_issue"]);
      const resolved = await b
        .grpc(ToolDiscoveryService)
        .resolveTool({ caller, name: "github.create_issue" });
      expect(resolved.activated).toBe(false); // already active: A's activation is visible here
      const prompt = await c.grpc(ToolDiscoveryService).renderToolPrompt({ caller });
      expect(prompt.visibleTools).toContain("github.create_issue");
    });

    it("make one activation and one event when three replicas activate the same tool at once", async () => {
      const tools = ["github.list_issues", "github.create_pull_request", "jira.create_ticket"];
      const caller = { tenantId: "initech", sessionId: "raced" };
      const answers = await Promise.all(
        tools.flatMap((name) =>
          replicas.map((replica) =>
            replica
              .grpc(ToolDiscoveryService)
              .activateTools({ caller, names: [name], scope: ActivationScope.SESSION }),
          ),
        ),
      );
      expect(answers.flatMap((answer) => answer.activated).sort()).toEqual([...tools].sort());
      const abort = new AbortController();
      const activations: string[] = [];
      const stream = (replicas[1] as TestReplica)
        .grpc(ToolDiscoveryService)
        .watchToolEvents(
          { caller: { tenantId: "initech" }, filter: { fromOldest: true, types: ["tool_activated"] } },
          { signal: abort.signal, timeoutMs: 10_000 },
        );
      // One more activation marks the end of the ones raced above.
      await (replicas[0] as TestReplica).grpc(ToolDiscoveryService).activateTools({
        caller: { ...caller, sessionId: "end" },
        names: ["slack.send_message"],
        scope: ActivationScope.SESSION,
      });
      for await (const message of stream) {
        if (message.message.case !== "event") continue;
        const event = message.message.value;
        if (event.sessionId === "end") break;
        if (event.payload.case === "toolActivated") activations.push(event.payload.value.tool);
      }
      abort.abort();
      expect(activations.sort()).toEqual([...tools].sort());
    });

    it("find a tool registered through one replica through the others on their next call", async () => {
      const [a, b, c] = replicas as [TestReplica, TestReplica, TestReplica];
      const caller = { tenantId: "acme" };
      const registered = await a.grpc(ToolDiscoveryService).registerTools({
        caller,
        source: "billing",
        namespace: "billing",
        tools: [{ name: "refund_invoice", description: "Refund a paid invoice to the customer's card." }],
      });
      expect(registered.added).toBe(1);
      for (const replica of [b, c]) {
        const found = await replica
          .grpc(ToolDiscoveryService)
          .searchTools({ caller, query: "refund an invoice", includeAlwaysLoaded: true });
        expect(found.tools.map((tool) => tool.name)).toContain("billing.refund_invoice");
      }
      // The same registration again, through another replica: nothing changes anywhere.
      const again = await c.grpc(ToolDiscoveryService).registerTools({
        caller,
        source: "billing",
        namespace: "billing",
        tools: [{ name: "refund_invoice", description: "Refund a paid invoice to the customer's card." }],
      });
      expect(again).toMatchObject({
        added: 0,
        updated: 0,
        unchanged: 1,
        catalogFingerprint: registered.catalogFingerprint,
      });
    });

    it("agree on one catalog when replicas register the same source at once", async () => {
      const caller = { tenantId: "initech" };
      const versions = replicas.map((_, i) => ({
        caller,
        source: "raced",
        namespace: "raced",
        replaceSource: true,
        tools: [
          { name: "tool", description: `Version ${i} of the raced tool.` },
          { name: `only_${i}`, description: "One replica's own." },
        ],
      }));
      const outcomes = await Promise.allSettled(
        replicas.map((replica, i) =>
          replica.grpc(ToolDiscoveryService).registerTools(versions[i] as (typeof versions)[0]),
        ),
      );
      expect(outcomes.some((outcome) => outcome.status === "fulfilled")).toBe(true);
      const catalogs = await Promise.all(
        replicas.map(async (replica) => {
          const listed = await replica
            .grpc(ToolDiscoveryService)
            .listTools({ caller, showAllTools: true, pageSize: 500 });
          return listed.tools
            .filter((tool) => tool.name.startsWith("raced."))
            .map((tool) => `${tool.name}: ${tool.description}`)
            .sort();
        }),
      );
      expect(catalogs[1]).toEqual(catalogs[0]);
      expect(catalogs[2]).toEqual(catalogs[0]);
      expect(catalogs[0]).toHaveLength(2); // one registration's whole source, replaced as a unit
    });

    it("find a skill pack loaded through one replica through the others, under the same skill ids", async () => {
      const caller = { tenantId: "acme" };
      const skill = `---
name: acme.rollback
title: Roll back a bad release
trigger: A release broke production and must be undone.
steps:
  - Find the last good release in the deploy log.
  - Redeploy it and watch the error rate.
---
`;
      const loaded = await (replicas[0] as TestReplica).grpc(SkillService).loadSkillPack({
        caller,
        packName: "acme-runbooks",
        scope: SkillScope.TENANT,
        source: { case: "files", value: { files: [{ path: "rollback.skill.md", content: skill }] } },
      });
      expect(loaded.loaded).toBe(1);
      const seen = await Promise.all(
        replicas.map(async (replica) => {
          const found = await replica
            .grpc(SkillService)
            .searchSkills({ caller, query: "undo a broken release" });
          expect(found.skills.map((hit) => hit.name)).toContain("acme.rollback");
          const got = await replica.grpc(SkillService).getSkills({ caller, names: ["acme.rollback"] });
          return got.skills[0]?.id;
        }),
      );
      expect(seen[0]).toMatch(/^sk_/);
      expect(new Set(seen).size).toBe(1);
    });

    it("store the same events under the same ids on every replica, the restarted one too", async () => {
      // The fence of a call brings each replica up to the log's head at that moment.
      for (const replica of replicas)
        await replica.grpc(UsageService).getUsageSummary({ caller: { tenantId: "acme" } });
      const logs = replicas.map((replica) => {
        const db = new Database(join(replica.dataDir, "wayfind.db"), { readonly: true });
        const rows = db
          .prepare<
            [],
            { id: number; type: string; ts_ms: number; tenant_id: string | null; attributes: string }
          >("SELECT id, type, ts_ms, tenant_id, attributes FROM events ORDER BY id")
          .all();
        db.close();
        return rows;
      });
      const shared = Math.min(...logs.map((rows) => rows.length));
      expect(shared).toBeGreaterThan(50);
      for (const rows of logs) {
        expect(rows.slice(0, shared)).toEqual(logs[0]?.slice(0, shared));
        expect(rows.map((row) => row.id)).toEqual(rows.map((_, i) => i + 1)); // no gap, no duplicate id
      }
    });

    it("count an event in the metrics of the replica whose call caused it only, so the fleet's sum is exact", async () => {
      const [a, b, c] = replicas as [TestReplica, TestReplica, TestReplica];
      await a
        .grpc(UsageService)
        .recordUsage({ ...recordRequest("acme", "counted-once"), model: "counted-once" });
      const inputTokens = async (replica: TestReplica) => {
        // A call first: the replica has applied the record (read fence) before it is scraped.
        await replica.grpc(UsageService).getUsageSummary({ caller: { tenantId: "acme" } });
        const text = await (await fetch(`http://127.0.0.1:${replica.port}/metrics`)).text();
        const line =
          /^wayfind_usage_tokens_total\{provider="anthropic",model="counted-once",kind="input"\} (\d+)$/m;
        return Number(line.exec(text)?.[1] ?? 0);
      };
      expect([await inputTokens(a), await inputTokens(b), await inputTokens(c)]).toEqual([1000, 0, 0]);
    });

    it("refuse a data dir a server wrote without PostgreSQL, since a replica's copy comes from the shared log", async () => {
      const standalone = await startTestServer();
      await standalone.grpc(UsageService).recordUsage(recordRequest("acme", "standalone"));
      await standalone.stop({ keepData: true });
      await expect(startReplica(fleet.postgres.url, standalone.dataDir)).rejects.toThrow(
        /holds events or usage recorded by a server that ran without PostgreSQL; .*give this replica an empty data dir/,
      );
    });

    it("refuse to start when the shared database does not answer, naming it without its password", async () => {
      const closedPort = new URL(fleet.postgres.url);
      closedPort.port = "1";
      closedPort.password = "s3cret";
      const failure = startReplica(closedPort.toString());
      await expect(failure).rejects.toThrow(
        /storage\.postgres: preparing this replica's copy from postgres:\/\/.*:\*\*\*@127\.0\.0\.1:1\/.* failed \(.*ECONNREFUSED.*\); check the URL/,
      );
      await expect(failure).rejects.not.toThrow(/s3cret/);
    });
  },
);
