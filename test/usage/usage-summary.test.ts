import { describe, expect, it } from "vitest";
import { MAX_RECORDS_SCANNED } from "../../src/usage/summary.ts";
import { caller, harness, usage } from "./helpers.ts";

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

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

  it("sums windows whose edges fall inside minutes, hours and days exactly as a scan of the raw records does", () => {
    const { ledger, db } = harness({ file: ":memory:" });
    const start = Date.UTC(2026, 0, 1);
    const models = ["claude-sonnet-4-5", "claude-haiku-4-5", "in-house-unpriced"];
    // A call every 29 s for two and a half days: every minute holds calls or is next to one that does.
    for (let call = 0; call * 29_000 < 2.5 * 24 * HOUR_MS; call++) {
      const model = models[call % 3] as string;
      ledger.recordUsage(caller({ sessionId: `s${call % 4}` }), {
        provider: model === "in-house-unpriced" ? "other" : "anthropic",
        model,
        usage: usage(100 + (call % 89), 10 + (call % 7), (call % 5) * 300, call % 11 === 0 ? 50 : 0),
        idempotencyKey: `k${call}`,
        occurredAt: new Date(start + call * 29_000),
      });
    }
    const scan = db.prepare<[number, number], { calls: number; input: number; cost: number }>(
      `SELECT COUNT(*) AS calls, TOTAL(input_tokens) AS input, TOTAL(cost_usd) AS cost FROM usage_records
       WHERE occurred_at_ms >= ? AND occurred_at_ms < ?`,
    );
    const windows: [string, string][] = [
      ["2026-01-01T10:20:07.001Z", "2026-01-02T19:40:59.999Z"], // partial days, hours, minutes at both edges
      ["2026-01-01T10:20:07Z", "2026-01-01T10:20:53Z"], // inside one minute
      ["2026-01-01T10:20:07Z", "2026-01-01T10:50:31Z"], // inside one hour, across minutes
      ["2026-01-01T10:20:07Z", "2026-01-01T13:07:45Z"], // inside one day, across hours
      ["2026-01-01T23:59:59.999Z", "2026-01-03T00:00:00.001Z"], // a millisecond past each whole day
      ["2026-01-01T05:17:00Z", "2026-01-02T17:43:00Z"], // on whole minutes, partial hours and days
    ];
    for (const [since, until] of windows) {
      const window = { since: at(since), until: at(until) };
      const expected = scan.get(window.since.getTime(), window.until.getTime());
      const { totals } = ledger.getUsageSummary(caller(), window);
      expect({ since, calls: totals.calls, input: totals.inputTokens }).toEqual({
        since,
        calls: expected?.calls,
        input: expected?.input,
      });
      expect(totals.totalCostUsd).toBeCloseTo(expected?.cost ?? Number.NaN, 9);
    }
  });

  it("refuses a window whose partial-minute edges hold more than 20,000 records as invalid_argument saying to use whole minutes, and sums the same minutes set on whole minutes from the per-minute aggregate", () => {
    const { ledger } = harness({ file: ":memory:" });
    const minute = Date.UTC(2026, 0, 1, 10, 17);
    for (let call = 0; call <= MAX_RECORDS_SCANNED; call++) {
      ledger.recordUsage(caller({ runId: `r${call}` }), {
        ...sonnet,
        usage: usage(1),
        idempotencyKey: `k${call}`,
        occurredAt: new Date(minute + 1 + call * 2),
      });
    }
    const partialMinute = { since: new Date(minute + 1), until: new Date(minute + 2 * MINUTE_MS) };
    expect(() => ledger.getUsageSummary(caller(), partialMinute)).toThrow(
      expect.objectContaining({
        code: "invalid_argument",
        message: expect.stringMatching(
          /reads at most 20,000 usage records in the partial minutes.*whole minutes/,
        ),
      }),
    );
    const wholeMinutes = { since: new Date(minute), until: new Date(minute + 2 * MINUTE_MS) };
    expect(ledger.getUsageSummary(caller(), wholeMinutes).totals.calls).toBe(MAX_RECORDS_SCANNED + 1);
  });
});
