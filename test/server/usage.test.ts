import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageGroupBy, UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

let wayfind: RouterTestServer;
beforeAll(async () => {
  wayfind = await startRouterServer();
});
afterAll(() => wayfind.stop());

const caller = { tenantId: "acme", sessionId: "s-1", runId: "r-1" };
const usage = {
  inputTokens: 1000n,
  outputTokens: 200n,
  cacheReadInputTokens: 9000n,
  cacheCreationInputTokens: 0n,
};

describe("UsageService", () => {
  it("prices a call and counts a retry once", async () => {
    const client = wayfind.grpc(UsageService);
    const request = {
      caller,
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage,
      idempotencyKey: "msg_1",
    };
    const first = await client.recordUsage(request);
    const retry = await client.recordUsage(request);
    // 1000 × $3 + 200 × $15 + 9000 × $0.30 per million tokens.
    expect(first.costUsd).toBeCloseTo(0.0087, 10);
    expect(retry).toMatchObject({ duplicate: true, costUsd: first.costUsd });
    const summary = await client.getUsageSummary({ caller, groupBy: UsageGroupBy.MODEL });
    expect(summary.totals?.calls).toBe(1n);
    expect(summary.totals?.cacheHitRate).toBeCloseTo(0.9, 10);
    expect(summary.groups.map((group) => group.key)).toEqual(["claude-sonnet-4-5"]);
  });

  it("rejects the same idempotency key with different values", async () => {
    const client = wayfind.grpc(UsageService);
    await client.recordUsage({
      caller,
      provider: Provider.OPENAI,
      model: "gpt-4.1",
      usage,
      idempotencyKey: "k-2",
    });
    await expect(
      client.recordUsage({
        caller,
        provider: Provider.OPENAI,
        model: "gpt-4.1",
        usage: { ...usage, outputTokens: 1n },
        idempotencyKey: "k-2",
      }),
    ).rejects.toMatchObject({ code: Code.AlreadyExists });
  });

  it("reports an unknown model's cost as absent, never zero", async () => {
    const response = await wayfind.grpc(UsageService).recordUsage({
      caller,
      provider: Provider.OTHER,
      model: "house-model-7",
      usage,
      idempotencyKey: "k-3",
    });
    expect(response.costUsd).toBeUndefined();
    expect(response.unknownCostReason).not.toBe("");
  });

  it("rejects a missing provider with INVALID_ARGUMENT", async () => {
    await expect(
      wayfind.grpc(UsageService).recordUsage({ caller, model: "x", usage, idempotencyKey: "k-4" }),
    ).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("provider") });
  });

  it("rejects an unknown enum value with INVALID_ARGUMENT", async () => {
    await expect(
      wayfind
        .grpc(UsageService)
        .recordUsage({ caller, provider: 42 as Provider, model: "x", usage, idempotencyKey: "k-5" }),
    ).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it("never lets a tenant read another tenant's usage", async () => {
    await expect(
      wayfind.grpc(UsageService).getUsageSummary({ caller, tenantId: "globex" }),
    ).rejects.toMatchObject({ code: Code.PermissionDenied });
  });
});

describe("watch streams", () => {
  it("streams usage_recorded events and resumes after a cursor", async () => {
    const client = wayfind.grpc(UsageService);
    const abort = new AbortController();
    const seen: bigint[] = [];
    const stream = client.watchUsageEvents(
      { caller, filter: { fromOldest: true } },
      { signal: abort.signal },
    );
    for await (const message of stream) {
      if (message.message.case === "event") seen.push(message.message.value.id);
      if (seen.length === 2) break;
    }
    abort.abort();
    const resumed = client.watchUsageEvents({ caller, filter: { afterId: seen[0] } });
    for await (const message of resumed) {
      if (message.message.case === "event") {
        expect(message.message.value.id).toBe(seen[1]);
        expect(message.message.value.type).toBe("usage_recorded");
        break;
      }
    }
  });

  it("refuses a tenant's request for another tenant's events", async () => {
    const stream = wayfind
      .grpc(ToolDiscoveryService)
      .watchToolEvents({ caller, filter: { tenantId: "globex" } });
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: Code.PermissionDenied,
    });
  });

  it("rejects an event type another RPC streams", async () => {
    const stream = wayfind
      .grpc(ToolDiscoveryService)
      .watchToolEvents({ caller, filter: { types: ["usage_recorded"] } });
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: Code.InvalidArgument });
  });
});

describe("prices from the YAML config", () => {
  // Distinct prices, so each cost below can only come from its own field.
  const prices = { input: 2, output: 3, cache_write: 5, cache_write_1h: 7, cache_read: 11 };
  let priced: RouterTestServer;
  beforeAll(async () => {
    priced = await startRouterServer({
      pricing: [{ provider: "anthropic", model: "claude-custom", ...prices }],
    });
  });
  afterAll(() => priced.stop());

  const million = 1_000_000n;
  const none = { inputTokens: 0n, outputTokens: 0n, cacheReadInputTokens: 0n, cacheCreationInputTokens: 0n };
  it.each([
    ["input", { ...none, inputTokens: million }, prices.input],
    ["output", { ...none, outputTokens: million }, prices.output],
    ["cache_write", { ...none, cacheCreationInputTokens: million }, prices.cache_write],
    [
      "cache_write_1h",
      { ...none, cacheCreationInputTokens: million, cacheCreation1hInputTokens: million },
      prices.cache_write_1h,
    ],
    ["cache_read", { ...none, cacheReadInputTokens: million }, prices.cache_read],
  ])("bills a million %s tokens at the configured price", async (field, tokens, perMillion) => {
    const answer = await priced.grpc(UsageService).recordUsage({
      caller,
      provider: Provider.ANTHROPIC,
      model: "claude-custom",
      usage: tokens,
      idempotencyKey: `price-${field}`,
    });
    expect(answer.costUsd).toBeCloseTo(perMillion, 10);
  });
});
