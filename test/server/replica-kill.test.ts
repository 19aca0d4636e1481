import { describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { fleetForFile, startReplica, type TestReplica } from "../support/replicas.ts";

// kill -9 of one replica of three under load (issue 17): nothing acknowledged is lost, retries on
// another replica succeed, a resuming observer misses nothing and sees nothing twice, and the killed
// replica catches up when it starts again.

const CLIENTS = 6;
/** Acknowledged records after which replica 0 is killed, with every client mid-call. */
const KILL_AFTER = 120;
/** Records each client makes in all. */
const PER_CLIENT = 60;
const caller = { tenantId: "acme", sessionId: "load" };

const { fleet, unavailable } = fleetForFile(3);
const { replicas } = fleet;

function record(key: string) {
  return {
    caller,
    provider: Provider.ANTHROPIC,
    model: "claude-sonnet-4-5",
    usage: { inputTokens: 100n, outputTokens: 10n, cacheReadInputTokens: 0n, cacheCreationInputTokens: 0n },
    idempotencyKey: key,
  };
}

/**
 * Watches usage events from the oldest through `first`, and when that replica dies resumes on
 * `then` after the last id it received, until it has `count` events.
 */
async function observe(first: TestReplica, then: TestReplica, count: number, signal: AbortSignal) {
  const ids: bigint[] = [];
  let resumed = false;
  for (const replica of [first, then]) {
    const filter = ids.length === 0 ? { fromOldest: true } : { afterId: ids.at(-1) };
    try {
      for await (const message of replica
        .grpc(UsageService)
        .watchUsageEvents({ caller, filter }, { signal })) {
        if (message.message.case === "event") ids.push(message.message.value.id);
        if (ids.length === count) return { ids, resumed };
      }
    } catch (error) {
      if (signal.aborted) throw error;
    }
    resumed = true;
  }
  return { ids, resumed };
}

describe.skipIf(unavailable)(
  `kill -9 of one replica under load${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("loses no acknowledged usage, duplicates and skips no event for a resuming observer, and catches up on restart", async () => {
      const [doomed, steady, third] = replicas as [TestReplica, TestReplica, TestReplica];
      const abort = new AbortController();
      const watching = observe(doomed, steady, CLIENTS * PER_CLIENT, abort.signal);
      let acknowledged = 0;
      let retried = 0;
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, client) => {
          // Clients are spread over the replicas; one that fails goes on with the next replica.
          let at = client % replicas.length;
          for (let call = 0; call < PER_CLIENT; call++) {
            const key = `c${client}-${call}`;
            for (;;) {
              try {
                await (replicas[at] as TestReplica)
                  .grpc(UsageService)
                  .recordUsage(record(key), { timeoutMs: 5_000 });
                break;
              } catch {
                at = (at + 1) % replicas.length;
                retried++;
              }
            }
            if (++acknowledged === KILL_AFTER) doomed.run.child.kill("SIGKILL");
          }
        }),
      );
      expect(await doomed.run.exited).toBeNull(); // killed, not exited
      expect(retried).toBeGreaterThan(0);

      const total = BigInt(CLIENTS * PER_CLIENT);
      for (const replica of [steady, third]) {
        const summary = await replica.grpc(UsageService).getUsageSummary({ caller });
        expect(summary.totals?.calls).toBe(total); // every key once: nothing lost, no retry counted twice
      }
      const { ids, resumed } = await watching;
      abort.abort();
      expect(resumed).toBe(true);
      expect(ids).toHaveLength(CLIENTS * PER_CLIENT);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort((x, y) => (x < y ? -1 : 1))).toEqual(ids); // in order, each once

      const restarted = await startReplica(fleet.postgres.url, doomed.dataDir);
      replicas[0] = restarted;
      const caughtUp = await restarted.grpc(UsageService).getUsageSummary({ caller });
      expect(caughtUp.totals?.calls).toBe(total);
    }, 90_000);
  },
);
