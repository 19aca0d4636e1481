import { describe, expect, it } from "vitest";
import { MAX_RECORDS_SCANNED } from "../../src/usage/ledger.ts";
import { caller, harness, usage } from "./helpers.ts";

const sonnet = { provider: "anthropic", model: "claude-sonnet-4-5" } as const;
const at = (iso: string) => new Date(iso);

describe("getUsageSummary", () => {
  it("defines cache hit rate as cache_read ÷ (input + cache_read + cache_write)", () => {
    const { ledger } = harness();
    ledger.recordUsage(caller(), { ...sonnet, usage: usage(100, 10, 600, 300), idempotencyKey: "a" });
    expect(ledger.getUsageSummary(caller()).totals.cacheHitRate).toBeCloseTo(0.6, 12);
  });

  it("reports a null hit rate, not zero, when there is no input", () => {
    const { ledger } = harness();
    expect(ledger.getUsageSummary(caller()).totals.cacheHitRate).toBeNull();
  });

  it("sums known costs and counts calls whose cost is unknown", () => {
    const { ledger } = harness();
    ledger.recordUsage(caller(), { ...sonnet, usage: usage(1_000_000), idempotencyKey: "a" });
    ledger.recordUsage(caller(), { provider: "other", model: "x", usage: usage(5), idempotencyKey: "b" });
    const { totals } = ledger.getUsageSummary(caller());
    expect(totals.totalCostUsd).toBeCloseTo(3, 10);
    expect(totals.unknownCostCalls).toBe(1);
    expect(totals.calls).toBe(2);
  });

  it("reports savings against the same tokens billed uncached", () => {
    const { ledger } = harness();
    // 1M cache reads: $0.30 cached vs $3.00 as plain input.
    ledger.recordUsage(caller(), { ...sonnet, usage: usage(0, 0, 1_000_000), idempotencyKey: "a" });
    const { totals } = ledger.getUsageSummary(caller());
    expect(totals.uncachedCostUsd).toBeCloseTo(3, 10);
    expect(totals.savingsUsd).toBeCloseTo(2.7, 10);
  });

  it("excludes cache reads from Anthropic's rate-limit input but counts them for OpenAI", () => {
    const { ledger } = harness();
    ledger.recordUsage(caller(), { ...sonnet, usage: usage(10, 0, 1000, 5), idempotencyKey: "a" });
    ledger.recordUsage(caller(), {
      provider: "openai",
      model: "gpt-5",
      usage: usage(10, 0, 1000),
      idempotencyKey: "b",
    });
    const [anthropic, openai] = ledger.getUsageSummary(caller(), { groupBy: ["provider"] }).groups;
    expect(anthropic?.totals.rateLimitInputTokens).toBe(15);
    expect(openai?.totals.rateLimitInputTokens).toBe(1010);
  });

  it("sees only the caller's tenant", () => {
    const { ledger } = harness();
    ledger.recordUsage(caller({ tenantId: "a" }), { ...sonnet, usage: usage(1), idempotencyKey: "k" });
    ledger.recordUsage(caller({ tenantId: "b" }), { ...sonnet, usage: usage(2), idempotencyKey: "k" });
    expect(ledger.getUsageSummary(caller({ tenantId: "b" })).totals.inputTokens).toBe(2);
  });

  it("refuses a tenant filter other than the caller's own as permission_denied", () => {
    const { ledger } = harness();
    expect(() => ledger.getUsageSummary(caller({ tenantId: "a" }), { tenantId: "b" })).toThrow(
      expect.objectContaining({ code: "permission_denied" }),
    );
  });

  it("filters by session and model", () => {
    const { ledger } = harness();
    ledger.recordUsage(caller({ sessionId: "s1" }), { ...sonnet, usage: usage(1), idempotencyKey: "a" });
    ledger.recordUsage(caller({ sessionId: "s2" }), { ...sonnet, usage: usage(2), idempotencyKey: "b" });
    ledger.recordUsage(caller({ sessionId: "s2" }), {
      provider: "anthropic",
      model: "claude-haiku-4-5",
      usage: usage(4),
      idempotencyKey: "c",
    });
    expect(ledger.getUsageSummary(caller(), { sessionId: "s2" }).totals.inputTokens).toBe(6);
    expect(
      ledger.getUsageSummary(caller(), { sessionId: "s2", model: "claude-haiku-4-5" }).totals.inputTokens,
    ).toBe(4);
  });

  it("filters by the half-open time window [since, until)", () => {
    const { ledger } = harness();
    const times = ["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"];
    times.forEach((t, i) => {
      ledger.recordUsage(caller(), {
        ...sonnet,
        usage: usage(10 ** i),
        idempotencyKey: t,
        occurredAt: at(t),
      });
    });
    const window = { since: at("2026-01-02T00:00:00Z"), until: at("2026-01-03T00:00:00Z") };
    expect(ledger.getUsageSummary(caller(), window).totals.inputTokens).toBe(10);
  });

  it("groups by model and UTC day, ordered by key", () => {
    const { ledger } = harness();
    const rec = (model: string, iso: string, n: number) =>
      ledger.recordUsage(caller(), {
        provider: "anthropic",
        model,
        usage: usage(n),
        idempotencyKey: `${model}${iso}`,
        occurredAt: at(iso),
      });
    rec("claude-sonnet-4-5", "2026-01-01T23:00:00Z", 1);
    rec("claude-haiku-4-5", "2026-01-01T01:00:00Z", 2);
    rec("claude-haiku-4-5", "2026-01-02T01:00:00Z", 4);
    const groups = ledger.getUsageSummary(caller(), { groupBy: ["model", "day"] }).groups;
    expect(groups.map((g) => [g.key, g.totals.inputTokens])).toEqual([
      [{ model: "claude-haiku-4-5", day: "2026-01-01" }, 2],
      [{ model: "claude-haiku-4-5", day: "2026-01-02" }, 4],
      [{ model: "claude-sonnet-4-5", day: "2026-01-01" }, 1],
    ]);
  });

  it("puts a call in its UTC day also before 1970, from the records and from the daily sums alike", () => {
    const { ledger } = harness();
    ledger.recordUsage(caller(), {
      ...sonnet,
      usage: usage(1),
      idempotencyKey: "a",
      occurredAt: new Date(-1),
    });
    const days = (groupBy: ("session" | "day")[]) =>
      ledger.getUsageSummary(caller(), { groupBy }).groups.map((g) => g.key.day);
    expect(days(["day"])).toEqual(["1969-12-31"]);
    expect(days(["session", "day"])).toEqual(["1969-12-31"]);
  });

  it("rejects an empty or inverted window and an unknown group as invalid_argument", () => {
    const { ledger } = harness();
    const t = at("2026-01-01T00:00:00Z");
    expect(() => ledger.getUsageSummary(caller(), { since: t, until: t })).toThrow(
      /since must be before until/,
    );
    expect(() => ledger.getUsageSummary(caller(), { groupBy: ["tenant" as "model"] })).toThrow(
      /group_by "tenant"/,
    );
  });

  it("refuses a summary by session or run that would scan more than 20,000 records as invalid_argument saying how to narrow it", () => {
    const { ledger } = harness({ file: ":memory:" });
    const start = Date.UTC(2026, 0, 1);
    for (let call = 0; call <= MAX_RECORDS_SCANNED; call++) {
      ledger.recordUsage(caller({ sessionId: "busy", runId: `r${call}` }), {
        ...sonnet,
        usage: usage(1),
        idempotencyKey: `k${call}`,
        occurredAt: new Date(start + call * 1000),
      });
    }
    expect(MAX_RECORDS_SCANNED).toBe(20_000);
    const tooMany = /reads at most 20,000 usage records.*narrow the window \(start_time, end_time\)/;
    expect(() => ledger.getUsageSummary(caller(), { sessionId: "busy" })).toThrow(tooMany);
    expect(() => ledger.getUsageSummary(caller(), { groupBy: ["run"] })).toThrow(
      expect.objectContaining({ code: "invalid_argument", message: expect.stringMatching(tooMany) }),
    );
    const firstHour = { since: new Date(start), until: new Date(start + 3_600_000) };
    expect(ledger.getUsageSummary(caller(), { sessionId: "busy", ...firstHour }).totals.calls).toBe(3_600);
    expect(ledger.getUsageSummary(caller(), { groupBy: ["run"], ...firstHour }).groups).toHaveLength(3_600);
    expect(ledger.getUsageSummary(caller(), { groupBy: ["day"] }).totals.calls).toBe(MAX_RECORDS_SCANNED + 1);
  });
});
