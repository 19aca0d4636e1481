import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Outcome } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { runCli } from "../support/cli.ts";
import { fleetForFile, startReplica, type TestReplica } from "../support/replicas.ts";

// Two `wayfind serve` processes (the demo config) on one real PostgreSQL: a choice made on one
// replica teaches the tenant's search on the other, as does one made on another replica than its
// search; what was learned survives a restart, and is forgotten everywhere when the CLI resets it.
const { fleet, unavailable } = fleetForFile(2);
const { replicas } = fleet;

const REQUEST = "search for the latest quarterly report";
const caller = (tenantId: string, runId: string) => ({ tenantId, runId, sessionId: "s" });

/** A run of `tenantId` on `replica` searches, then opens the last hit: the tool it chose. */
async function chooseLastHit(replica: TestReplica, tenantId: string, runId: string): Promise<string> {
  const tools = replica.grpc(ToolDiscoveryService);
  const found = await tools.searchTools({ caller: caller(tenantId, runId), query: REQUEST });
  expect(found.tools.length).toBeGreaterThan(1);
  const chosen = found.tools.at(-1)?.name ?? "";
  await tools.getTools({ caller: caller(tenantId, runId), names: [chosen] });
  return chosen;
}

async function learnedOf(replica: TestReplica, tenantId: string, tool: string): Promise<number> {
  const found = await replica
    .grpc(ToolDiscoveryService)
    .searchTools({ caller: caller(tenantId, "look"), query: REQUEST });
  return found.tools.find((hit) => hit.name === tool)?.learnedScore ?? 0;
}

describe.skipIf(unavailable)(
  `learning on two replicas${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("teaches a choice made on one replica to the tenant's search on the other, and to no other tenant", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      const chosen = await chooseLastHit(a, "acme", "r-1");
      // The replica that saw the choice waits for its lesson; another sees it once the log carries it.
      expect(await learnedOf(a, "acme", chosen)).toBeGreaterThan(0);
      await expect.poll(() => learnedOf(b, "acme", chosen), { timeout: 10_000 }).toBeGreaterThan(0);
      expect(await learnedOf(b, "initech", chosen)).toBe(0);
    });

    it("learns from a choice and a report that reach another replica than their search", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      const found = await a
        .grpc(ToolDiscoveryService)
        .searchTools({ caller: caller("pied", "r-4"), query: REQUEST });
      const chosen = found.tools.at(-1)?.name ?? "";
      await b.grpc(ToolDiscoveryService).getTools({ caller: caller("pied", "r-4"), names: [chosen] });
      await expect.poll(() => learnedOf(a, "pied", chosen), { timeout: 10_000 }).toBeGreaterThan(0);

      const reported = found.tools[1]?.name ?? "";
      const report = await b.grpc(ToolDiscoveryService).reportToolOutcome({
        caller: caller("pied", "r-4"),
        searchId: found.searchId,
        tool: reported,
        outcome: Outcome.SUCCEEDED,
      });
      expect(report).toMatchObject({ learned: true, duplicate: false });
      // Another tenant's report naming that search finds nothing, on any replica.
      const other = b.grpc(ToolDiscoveryService).reportToolOutcome({
        caller: caller("initech", "r-4"),
        searchId: found.searchId,
        tool: reported,
        outcome: Outcome.SUCCEEDED,
      });
      await expect(other).rejects.toMatchObject({ code: Code.NotFound });
    });

    it("forgets on every replica what `wayfind learning reset` forgets, through the shared log", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      const chosen = await chooseLastHit(a, "hooli", "r-3");
      await expect.poll(() => learnedOf(b, "hooli", chosen), { timeout: 10_000 }).toBeGreaterThan(0);

      const reset = runCli(["learning", "reset", "--tenant", "hooli", "--data-dir", a.dataDir], {
        WAYFIND_DATABASE_URL: fleet.postgres.url,
      });
      let said = "";
      reset.child.stdout.on("data", (chunk: Buffer) => {
        said += chunk.toString();
      });
      expect(await reset.exited, reset.stderr.join("")).toBe(0);
      expect(said).toMatch(
        /forgot what it learned \(change \d+ of the shared log: every replica applies it\)/,
      );
      for (const replica of [a, b])
        await expect.poll(() => learnedOf(replica, "hooli", chosen), { timeout: 10_000 }).toBe(0);
    });

    it("keeps what was learned across a restart", async () => {
      const b = replicas[1] as TestReplica;
      const chosen = await chooseLastHit(b, "umbrella", "r-2");
      const before = await learnedOf(b, "umbrella", chosen);
      await b.stop();
      const restarted = await startReplica(fleet.postgres.url, b.dataDir);
      replicas[1] = restarted;
      expect(before).toBeGreaterThan(0);
      expect(await learnedOf(restarted, "umbrella", chosen)).toBe(before);
    });
  },
);
