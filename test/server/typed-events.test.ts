import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import {
  type Event,
  EventType,
  ToolActivated_Scope,
  ToolActivated_Source,
} from "../../gen/ts/wayfind/v1/events_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

// Issue 19: every event carries its typed payload; watchers filter by EventType and by tool.
const caller = { tenantId: "typed", sessionId: "s1", runId: "r1" };

let wayfind: RouterTestServer;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-typed-"));
  writeFileSync(
    join(dir, "tools.jsonl"),
    ["github.create_issue", "github.close_issue"]
      .map((name) => JSON.stringify({ name, description: `${name}.` }))
      .join("\n"),
  );
  wayfind = await startRouterServer(
    { catalogs: [{ path: "tools.jsonl", loading_mode: "deferred" }] },
    { dataDir: dir },
  );
});
afterAll(() => wayfind.stop());

/** The events a stream delivers (after its status) until `count` arrived. */
async function collect(
  stream: AsyncIterable<{ message: { case: string | undefined; value?: unknown } }>,
  count: number,
) {
  const events: Event[] = [];
  for await (const message of stream) {
    if (message.message.case === "event") events.push(message.message.value as Event);
    if (events.length === count) break;
  }
  return events;
}

describe("typed events", () => {
  it("streams tool_activated with its typed payload, filtered by EventType and by tool", async () => {
    const tools = wayfind.grpc(ToolDiscoveryService);
    const abort = new AbortController();
    const stream = tools.watchToolEvents(
      { caller, filter: { eventTypes: [EventType.TOOL_ACTIVATED], tool: "github.close_issue" } },
      { signal: abort.signal },
    );
    const received = collect(stream, 1);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the stream is live
    await tools.activateTools({ caller, names: ["github.create_issue"] });
    await tools.resolveTool({ caller, name: "github.close_issue" });
    const [event] = await received;
    abort.abort();
    expect(event?.eventType).toBe(EventType.TOOL_ACTIVATED);
    expect(event?.type).toBe("tool_activated");
    expect(event?.payload).toMatchObject({
      case: "toolActivated",
      value: {
        tool: "github.close_issue",
        scope: ToolActivated_Scope.RUN,
        source: ToolActivated_Source.RESOLVE,
      },
    });
    // Replayed from the log, the same filter holds: create_issue's earlier activation is skipped.
    const replay = new AbortController();
    const [replayed] = await collect(
      tools.watchToolEvents(
        {
          caller,
          filter: { fromOldest: true, eventTypes: [EventType.TOOL_ACTIVATED], tool: "github.close_issue" },
        },
        { signal: replay.signal },
      ),
      1,
    );
    replay.abort();
    expect(replayed?.id).toBe(event?.id);
  });

  it("replays from a time on (filter.since), leaving out what came before it", async () => {
    const tools = wayfind.grpc(ToolDiscoveryService);
    const run = { tenantId: "acme", sessionId: "s-since", runId: "r-since" };
    await tools.activateTools({ caller: run, names: ["github.create_issue"] });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const since = timestampNow();
    await tools.activateTools({ caller: run, names: ["github.close_issue"] });
    const abort = new AbortController();
    const [first] = await collect(
      tools.watchToolEvents(
        { caller: run, filter: { since, eventTypes: [EventType.TOOL_ACTIVATED] } },
        { signal: abort.signal },
      ),
      1,
    );
    abort.abort();
    expect(first?.payload).toMatchObject({ case: "toolActivated", value: { tool: "github.close_issue" } });
  });

  it("streams usage_recorded with integer token counts and the cost", async () => {
    const usage = wayfind.grpc(UsageService);
    await usage.recordUsage({
      caller,
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage: { inputTokens: 1200n, outputTokens: 350n, cacheReadInputTokens: 8000n },
      idempotencyKey: "typed-1",
    });
    const abort = new AbortController();
    const [event] = await collect(
      usage.watchUsageEvents(
        { caller, filter: { fromOldest: true, eventTypes: [EventType.USAGE_RECORDED] } },
        { signal: abort.signal },
      ),
      1,
    );
    abort.abort();
    expect(event?.payload.case).toBe("usageRecorded");
    if (event?.payload.case !== "usageRecorded") return;
    expect(event.payload.value).toMatchObject({
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      inputTokens: 1200n,
      outputTokens: 350n,
      cacheReadInputTokens: 8000n,
    });
    expect(event.payload.value.costUsd).toBeGreaterThan(0);
  });

  it("refuses an event type the stream does not carry, naming it", async () => {
    const error = await failure(
      collect(
        wayfind
          .grpc(ToolDiscoveryService)
          .watchToolEvents({ filter: { eventTypes: [EventType.USAGE_RECORDED] } }),
        1,
      ),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain('"usage_recorded" is not streamed by this RPC');
  });
});
