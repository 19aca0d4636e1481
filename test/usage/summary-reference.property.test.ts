import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Provider,
  rateLimitInputTokens,
  USAGE_GROUP_BY,
  type UsageGroupBy,
  type UsageSummaryFilter,
  type UsageTotals,
} from "../../src/usage/index.ts";
import { caller, harness, usage } from "./helpers.ts";

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
const FIRST_DAY = Date.UTC(2026, 0, 10);
/** Records occur over 4 UTC days; the clock starts after them (occurred_at may not be in the future). */
const CLOCK_START = FIRST_DAY + 5 * DAY_MS;
const MODELS = [
  { provider: "anthropic", model: "claude-sonnet-4-5" },
  { provider: "anthropic", model: "claude-haiku-4-5" },
  { provider: "openai", model: "gpt-4.1" },
  { provider: "other", model: "in-house-unpriced" },
] as const;
const SESSIONS = ["s0", "s1", "s2"];
const RUNS = ["r0", "r1", "r2", "r3"];

/** A time in the 4 days, often on a day, hour or minute boundary, the edge cases of the aggregates. */
const instant = fc.oneof(
  fc.integer({ min: 0, max: 4 }).map((day) => FIRST_DAY + day * DAY_MS),
  fc.integer({ min: 0, max: 4 * 24 }).map((hour) => FIRST_DAY + hour * HOUR_MS),
  fc.integer({ min: 0, max: 4 * 24 * 60 }).map((minute) => FIRST_DAY + minute * MINUTE_MS),
  fc.integer({ min: -DAY_MS, max: 5 * DAY_MS }).map((offset) => FIRST_DAY + offset),
);

const recordArb = fc.record({
  occurredAt: instant,
  modelIndex: fc.integer({ min: 0, max: MODELS.length - 1 }),
  session: fc.constantFrom(...SESSIONS),
  run: fc.constantFrom(...RUNS),
  tokens: fc.tuple(fc.nat(5_000), fc.nat(1_000), fc.nat(20_000), fc.nat(3_000)),
  /** Clock advance before recording it, so retention expires a prefix of the records. */
  recordedAfterMs: fc.nat(DAY_MS / 4),
});

const filterArb = fc
  .record({
    sessionId: fc.option(fc.constantFrom(...SESSIONS), { nil: undefined }),
    runId: fc.option(fc.constantFrom(...RUNS), { nil: undefined }),
    modelIndex: fc.option(fc.integer({ min: 0, max: MODELS.length - 1 }), { nil: undefined }),
    byProviderOnly: fc.boolean(),
    since: fc.option(instant, { nil: undefined }),
    until: fc.option(instant, { nil: undefined }),
    groupBy: fc.shuffledSubarray([...USAGE_GROUP_BY], { maxLength: 2 }),
  })
  .filter(({ since, until }) => since === undefined || until === undefined || since < until);

type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;
type Recorded = ValueOf<typeof recordArb> & {
  readonly recordedAt: number;
  readonly costUsd: number | null;
  readonly uncachedCostUsd: number | null;
};
type Filter = ValueOf<typeof filterArb>;

/** The compared part of the totals; costs rounded, as floating-point sums depend on their order. */
function comparable(totals: UsageTotals) {
  return {
    calls: totals.calls,
    inputTokens: totals.inputTokens,
    outputTokens: totals.outputTokens,
    cacheReadInputTokens: totals.cacheReadInputTokens,
    cacheCreationInputTokens: totals.cacheCreationInputTokens,
    rateLimitInputTokens: totals.rateLimitInputTokens,
    unknownCostCalls: totals.unknownCostCalls,
    totalCostUsd: Number(totals.totalCostUsd.toFixed(9)),
    uncachedCostUsd: Number(totals.uncachedCostUsd.toFixed(9)),
  };
}

function summaryFilter(filter: Filter): UsageSummaryFilter {
  const chosen = filter.modelIndex === undefined ? undefined : MODELS[filter.modelIndex];
  return {
    sessionId: filter.sessionId,
    runId: filter.runId,
    ...(chosen && (filter.byProviderOnly ? { provider: chosen.provider } : { model: chosen.model })),
    since: filter.since === undefined ? undefined : new Date(filter.since),
    until: filter.until === undefined ? undefined : new Date(filter.until),
    groupBy: filter.groupBy,
  };
}

/**
 * The plain reference: scan every record. A record counts when retained, or, pruned, when the summary
 * needs no session or run and its whole UTC day lies inside the window (the documented rule).
 */
function referenceSummary(records: readonly Recorded[], filter: UsageSummaryFilter, cutoffMs: number) {
  const groupBy = filter.groupBy ?? [];
  const needsRecords =
    filter.sessionId !== undefined ||
    filter.runId !== undefined ||
    groupBy.includes("session") ||
    groupBy.includes("run");
  const since = filter.since?.getTime() ?? Number.NEGATIVE_INFINITY;
  const until = filter.until?.getTime() ?? Number.POSITIVE_INFINITY;
  const counted = records.filter((r) => {
    const { provider, model } = MODELS[r.modelIndex] as (typeof MODELS)[number];
    if (filter.sessionId !== undefined && r.session !== filter.sessionId) return false;
    if (filter.runId !== undefined && r.run !== filter.runId) return false;
    if (filter.provider !== undefined && provider !== filter.provider) return false;
    if (filter.model !== undefined && model !== filter.model) return false;
    if (r.occurredAt < since || r.occurredAt >= until) return false;
    if (r.recordedAt >= cutoffMs) return true;
    const dayStart = r.occurredAt - (r.occurredAt % DAY_MS);
    return !needsRecords && dayStart >= since && dayStart + DAY_MS <= until;
  });
  const keyOf = (r: Recorded): Record<UsageGroupBy, string> => ({
    session: r.session,
    run: r.run,
    provider: (MODELS[r.modelIndex] as (typeof MODELS)[number]).provider,
    model: (MODELS[r.modelIndex] as (typeof MODELS)[number]).model,
    day: new Date(r.occurredAt).toISOString().slice(0, 10),
  });
  const groups = new Map<string, Recorded[]>();
  for (const r of counted) {
    const key = JSON.stringify(groupBy.map((g) => keyOf(r)[g]));
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return {
    totals: totalsOf(counted),
    groups:
      groupBy.length === 0
        ? []
        : [...groups.keys()].sort(compareKeys).map((key) => ({
            key: Object.fromEntries(groupBy.map((g, i) => [g, (JSON.parse(key) as string[])[i]])),
            totals: totalsOf(groups.get(key) ?? []),
          })),
  };
}

function compareKeys(a: string, b: string): number {
  const [left, right] = [JSON.parse(a) as string[], JSON.parse(b) as string[]];
  for (let i = 0; i < left.length; i++) {
    const [x = "", y = ""] = [left[i], right[i]];
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

function totalsOf(records: readonly Recorded[]) {
  const sum = (value: (r: Recorded) => number) => records.reduce((total, r) => total + value(r), 0);
  return {
    calls: records.length,
    inputTokens: sum((r) => r.tokens[0]),
    outputTokens: sum((r) => r.tokens[1]),
    cacheReadInputTokens: sum((r) => r.tokens[2]),
    cacheCreationInputTokens: sum((r) => r.tokens[3]),
    rateLimitInputTokens: sum((r) =>
      rateLimitInputTokens(
        (MODELS[r.modelIndex] as (typeof MODELS)[number]).provider as Provider,
        usage(...r.tokens),
      ),
    ),
    unknownCostCalls: records.filter((r) => r.costUsd === null).length,
    totalCostUsd: Number(sum((r) => r.costUsd ?? 0).toFixed(9)),
    uncachedCostUsd: Number(sum((r) => r.uncachedCostUsd ?? 0).toFixed(9)),
  };
}

describe("getUsageSummary against a scan of every record", () => {
  it("answers every filter, window and grouping as the scan does, before and after retention prunes records", () => {
    fc.assert(
      fc.property(
        fc.array(recordArb, { maxLength: 40 }),
        fc.array(filterArb, { minLength: 1, maxLength: 6 }),
        fc.nat(3 * DAY_MS),
        (inputs, filters, pruneAfterMs) => {
          let now = CLOCK_START;
          const h = harness({ now: () => now, retentionDays: 1, file: ":memory:" });
          const records = inputs.map((input, i): Recorded => {
            now += input.recordedAfterMs;
            const { provider, model } = MODELS[input.modelIndex] as (typeof MODELS)[number];
            const result = h.ledger.recordUsage(caller({ sessionId: input.session, runId: input.run }), {
              provider,
              model,
              usage: usage(...input.tokens),
              idempotencyKey: `k${i}`,
              occurredAt: new Date(input.occurredAt),
            });
            return {
              ...input,
              recordedAt: now,
              costUsd: result.costUsd,
              uncachedCostUsd: result.uncachedCostUsd,
            };
          });
          const check = (cutoffMs: number) => {
            for (const filter of filters.map(summaryFilter)) {
              const summary = h.ledger.getUsageSummary(caller(), filter);
              expect({
                totals: comparable(summary.totals),
                groups: summary.groups.map((g) => ({ key: g.key, totals: comparable(g.totals) })),
              }).toEqual(referenceSummary(records, filter, cutoffMs));
            }
          };
          check(Number.NEGATIVE_INFINITY);
          now += pruneAfterMs;
          while (h.ledger.pruneExpired(5).more) {}
          check(now - DAY_MS);
        },
      ),
      { numRuns: 150 },
    );
  });
});
