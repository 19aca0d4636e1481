import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import {
  startUsageRetention,
  type UsageGroupBy,
  type UsageSummary,
  type UsageSummaryFilter,
} from "../../src/usage/index.ts";
import { caller, harness, usage } from "./helpers.ts";

const DAY_MS = 86_400_000;
const START = Date.UTC(2026, 0, 10, 6); // 06:00 UTC, so calls spread over whole UTC days

/** A clock the test moves; records are stamped with it. */
function clock() {
  let now = START;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** Three days of calls over two sessions, two providers, a model without a price and cache traffic. */
function recordThreeDays(h: ReturnType<typeof harness>, time: ReturnType<typeof clock>): void {
  const models = [
    { provider: "anthropic", model: "claude-sonnet-4-5" },
    { provider: "openai", model: "gpt-4.1" },
    { provider: "other", model: "in-house-unpriced" },
  ] as const;
  for (let call = 0; call < 90; call++) {
    const { provider, model } = models[call % 3] as (typeof models)[number];
    h.ledger.recordUsage(caller({ sessionId: `s${call % 2}`, runId: `r${call % 5}` }), {
      provider,
      model,
      usage: usage(1000 + call, 100 + call, (call % 4) * 500, call % 7 === 0 ? 300 : 0),
      idempotencyKey: `k${call}`,
    });
    time.advance(DAY_MS / 30); // 30 calls a day
  }
}

/** `count` calls of one session, run and model, each 10 input tokens, on the current clock. */
function recordSameCall(h: ReturnType<typeof harness>, count: number): void {
  for (let call = 0; call < count; call++) {
    h.ledger.recordUsage(caller(), {
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage: usage(10),
      idempotencyKey: `k${call}`,
    });
  }
}

/** Windows and groupings the daily aggregate answers: not narrowed to, nor grouped by, a session or run. */
const WINDOWS: UsageSummaryFilter[] = [
  {},
  { since: new Date(START - (START % DAY_MS)), until: new Date(START + 10 * DAY_MS) },
  { provider: "openai" },
  { model: "in-house-unpriced" },
];
const GROUPINGS: UsageGroupBy[][] = [[], ["day"], ["model"], ["provider", "day"]];

/** Every summary, with sums of floating-point costs rounded (they are added in another order). */
function summaries(h: ReturnType<typeof harness>): unknown[] {
  const rounded = (summary: UsageSummary) =>
    JSON.parse(JSON.stringify(summary, (_, v) => (typeof v === "number" ? Number(v.toFixed(9)) : v)));
  return WINDOWS.flatMap((window) =>
    GROUPINGS.map((groupBy) => rounded(h.ledger.getUsageSummary(caller(), { ...window, groupBy }))),
  );
}

function pruneAll(h: ReturnType<typeof harness>): number {
  let deleted = 0;
  for (;;) {
    const batch = h.ledger.pruneExpired(7);
    deleted += batch.deleted;
    if (!batch.more) return deleted;
  }
}

/** One call under idempotency key "k". */
const KEYED_CALL = {
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  usage: usage(10),
  idempotencyKey: "k",
} as const;

const count = (h: ReturnType<typeof harness>, table: string) =>
  h.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get();

describe("usage retention", () => {
  it("keeps every summary by tenant, day, provider and model (totals, cost, cache hit rate, groups) the same once records are pruned", () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 30 });
    recordThreeDays(h, time);
    const before = summaries(h);
    time.advance(31 * DAY_MS);
    expect(pruneAll(h)).toBe(90);
    expect(summaries(h)).toEqual(before);
  });

  it("keeps session and run detail only as long as the records: summaries by session or run count retained records", () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 30 });
    recordThreeDays(h, time);
    expect(h.ledger.getUsageSummary(caller(), { sessionId: "s1" }).totals.calls).toBe(45);
    time.advance(31 * DAY_MS);
    pruneAll(h);
    expect(h.ledger.getUsageSummary(caller(), { sessionId: "s1" }).totals.calls).toBe(0);
    const byRun = h.ledger.getUsageSummary(caller(), { groupBy: ["run"] });
    expect(byRun.groups).toEqual([]);
    expect(byRun.totals.calls).toBe(0);
  });

  it("counts whole UTC days from the daily aggregate after pruning, and only retained records of a partial day at the window's edge", () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 30 });
    recordThreeDays(h, time); // 30 calls a day from 06:00 UTC on day 0 to 06:00 on day 3
    const day0 = START - (START % DAY_MS);
    const wholeDays = { since: new Date(day0 + DAY_MS), until: new Date(day0 + 3 * DAY_MS) };
    const fromNoon = { since: new Date(day0 + 1.5 * DAY_MS), until: new Date(day0 + 3 * DAY_MS) };
    expect(h.ledger.getUsageSummary(caller(), wholeDays).totals.calls).toBe(60);
    expect(h.ledger.getUsageSummary(caller(), fromNoon).totals.calls).toBe(45);
    time.advance(31 * DAY_MS);
    pruneAll(h);
    expect(h.ledger.getUsageSummary(caller(), wholeDays).totals.calls).toBe(60);
    expect(h.ledger.getUsageSummary(caller(), fromNoon).totals.calls).toBe(30);
  });

  it("removes only records recorded longer ago than the retention", () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 30 });
    recordThreeDays(h, time);
    // The clock is 3 days past the first call: 28 more and the first day's calls are over 30 days old.
    time.advance(28 * DAY_MS);
    pruneAll(h);
    expect(count(h, "usage_records")).toBe(60);
    const oldest = h.db.prepare("SELECT min(recorded_at_ms) FROM usage_records").pluck().get();
    expect(oldest).toBeGreaterThanOrEqual(time.now() - 30 * DAY_MS);
  });

  it("bounds the rows kept: one daily row per day and dimension, however many calls it had", () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 1 });
    recordSameCall(h, 500);
    time.advance(2 * DAY_MS);
    pruneAll(h);
    expect(count(h, "usage_records")).toBe(0);
    expect(count(h, "usage_daily")).toBe(1);
    expect(h.ledger.getUsageSummary(caller()).totals).toMatchObject({ calls: 500, inputTokens: 5000 });
  });

  it("keeps the hourly and per-minute aggregates equal to the retained records: a period stops counting its pruned records, and goes with its last one", () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 1 });
    recordThreeDays(h, time);
    const sumsOf = (table: string) =>
      h.db
        .prepare(
          `SELECT tenant_id, occurred_at_ms, provider, model, calls, input_tokens, output_tokens,
             cache_read_input_tokens, cache_creation_input_tokens, rate_limit_input_tokens,
             unknown_cost_calls, ROUND(cost_usd, 9) AS cost FROM ${table} ORDER BY 1, 2, 3, 4`,
        )
        .all();
    const sumsOfRecords = (periodMs: number) =>
      h.db
        .prepare(
          `SELECT tenant_id, occurred_at_ms - occurred_at_ms % ${periodMs} AS occurred_at_ms, provider, model,
             COUNT(*) AS calls, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,
             SUM(cache_read_input_tokens) AS cache_read_input_tokens,
             SUM(cache_creation_input_tokens) AS cache_creation_input_tokens,
             SUM(rate_limit_input_tokens) AS rate_limit_input_tokens,
             SUM(cost_usd IS NULL) AS unknown_cost_calls, ROUND(TOTAL(cost_usd), 9) AS cost
           FROM usage_records GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
        )
        .all();
    const expectEqualToRecords = () => {
      expect(sumsOf("usage_hourly")).toEqual(sumsOfRecords(3_600_000));
      expect(sumsOf("usage_minutely")).toEqual(sumsOfRecords(60_000));
    };
    expectEqualToRecords();
    time.advance(DAY_MS / 2); // all but the last half day of calls are now over a day old
    pruneAll(h);
    expect(count(h, "usage_records")).toBe(15);
    expectEqualToRecords();
    time.advance(3 * DAY_MS);
    pruneAll(h);
    expect(count(h, "usage_hourly")).toBe(0);
    expect(count(h, "usage_minutely")).toBe(0);
    expect(count(h, "usage_daily")).toBeGreaterThan(0);
  });

  it("deletes at most one batch per transaction and says whether more is waiting", () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 1 });
    recordThreeDays(h, time);
    time.advance(5 * DAY_MS);
    expect(h.ledger.pruneExpired(50)).toEqual({ deleted: 50, more: true });
    expect(h.ledger.pruneExpired(50)).toEqual({ deleted: 40, more: false });
    expect(h.ledger.pruneExpired(50)).toEqual({ deleted: 0, more: false });
  });

  it("forgets an idempotency key with its record: a retry after the retention counts again", () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 1 });
    expect(h.ledger.recordUsage(caller(), KEYED_CALL).duplicate).toBe(false);
    time.advance(DAY_MS / 2);
    expect(h.ledger.recordUsage(caller(), KEYED_CALL).duplicate).toBe(true);
    time.advance(DAY_MS);
    pruneAll(h);
    expect(h.ledger.recordUsage(caller(), KEYED_CALL).duplicate).toBe(false);
    expect(h.ledger.getUsageSummary(caller()).totals.calls).toBe(2);
  });

  it("counts a retry after the retention again even before pruning came to its record, as pruning would", () => {
    const retriedLate = (pruneFirst: boolean) => {
      const time = clock();
      const h = harness({ now: time.now, retentionDays: 1 });
      h.ledger.recordUsage(caller(), KEYED_CALL);
      time.advance(DAY_MS + 1);
      if (pruneFirst) pruneAll(h);
      expect(h.ledger.recordUsage(caller(), KEYED_CALL).duplicate).toBe(false);
      expect(count(h, "usage_records")).toBe(1);
      return summaries(h);
    };
    expect(retriedLate(false)).toEqual(retriedLate(true));
  });

  it("prunes on its retention clock, not the wall clock: a replica forgets at the log's time", () => {
    let logTime = START;
    const h = harness({ now: () => START, retentionClock: () => logTime, retentionDays: 1 });
    h.ledger.recordUsage(caller(), KEYED_CALL);
    logTime = START + DAY_MS / 2;
    expect(pruneAll(h)).toBe(0);
    logTime = START + DAY_MS + 1;
    expect(pruneAll(h)).toBe(1);
  });

  it("keeps every record when no retention is set", () => {
    const time = clock();
    const h = harness({ now: time.now });
    recordThreeDays(h, time);
    time.advance(3650 * DAY_MS);
    expect(h.ledger.pruneExpired()).toEqual({ deleted: 0, more: false });
    expect(count(h, "usage_records")).toBe(90);
  });

  it("runs on a timer, off the request path, in batches until the backlog is gone", async () => {
    const time = clock();
    const h = harness({ now: time.now, retentionDays: 1 });
    recordSameCall(h, 1_200);
    time.advance(2 * DAY_MS);
    const errors: unknown[] = [];
    const stop = startUsageRetention(h.ledger, { intervalMs: 5, onError: (error) => errors.push(error) });
    try {
      for (let waited = 0; count(h, "usage_records") !== 0 && waited < 5_000; waited += 10) await sleep(10);
    } finally {
      stop();
    }
    expect(count(h, "usage_records")).toBe(0);
    expect(h.ledger.getUsageSummary(caller()).totals).toMatchObject({ calls: 1_200, inputTokens: 12_000 });
    expect(errors).toEqual([]);
  });
});
