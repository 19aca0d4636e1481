import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SearchType } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { LoadingMode, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { HEALTH_BUDGET_MS, watchHealth } from "../support/health.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * The search index of a large catalog is rebuilt after every change: about a second of work at
 * 10,000 tools. It is built in slices between other calls, so the first search after a change waits
 * for it without holding the event loop: a health check, answered by the same loop, keeps answering
 * within a budget.
 */
/**
 * Built at once, their index held the loop ~0.5 s (5,000 tools: ~1.1 s). Fewer than the bulk
 * RegisterTools stall test (test/server/stall.test.ts), whose file runs beside this one.
 */
const TOOL_COUNT = 3_000;

const asOperator = { headers: { "wayfind-role": "admin" } };

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer();
});
afterAll(() => wayfind.stop());

/** Deterministic prose from a vocabulary large enough to give the ranker a realistic index. */
function words(seed: number, count: number): string {
  const out: string[] = [];
  let x = seed;
  for (let i = 0; i < count; i++) {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    out.push(`word${x % 3_000}`);
  }
  return out.join(" ");
}

function catalog(count: number) {
  return Array.from({ length: count }, (_, i) => ({
    name: `tool${i}.${words(i, 2).replaceAll(" ", "_")}`,
    description: words(i * 7 + 1, 30),
    tags: words(i * 13 + 5, 3).split(" "),
    loadingMode: LoadingMode.DEFERRED,
    argsSchema: {
      type: "object",
      properties: { [`param${i % 50}`]: { type: "string", description: words(i * 3 + 2, 8) } },
    },
  }));
}

describe("the first search after a large change", () => {
  it("waits for the new index without holding the event loop, and sees the change", async () => {
    const tools = wayfind.grpc(ToolDiscoveryService);
    const registered = catalog(TOOL_COUNT);
    // Registration itself is not what is measured here; the index build and the search are.
    await tools.registerTools({ source: "bulk", tools: registered }, asOperator);

    const health = watchHealth(wayfind);
    const wanted = registered[TOOL_COUNT - 1]?.name ?? "";
    const found = await tools.searchTools({ query: wanted, searchType: SearchType.EXACT });
    const { slowestMs, answered } = await health.stop();

    expect(found.tools.map((tool) => tool.name)).toEqual([wanted]);
    expect(answered).toBeGreaterThan(0);
    expect(slowestMs).toBeLessThan(HEALTH_BUDGET_MS);
  });
});
