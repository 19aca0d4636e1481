import { describe, expect, it } from "vitest";
import { caller, harness, tempDbFile, usage } from "./helpers.ts";

/** A database file with one call recorded at each time, of 1, 10, 100, … input tokens. */
function callsRecordedAt(times: readonly string[]) {
  const file = tempDbFile();
  const old = harness({ file });
  times.forEach((iso, i) => {
    old.ledger.recordUsage(caller(), {
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage: usage(10 ** i, 1, 100),
      idempotencyKey: iso,
      occurredAt: new Date(iso),
    });
  });
  return { file, old };
}

describe("usage migrations", () => {
  it("sums the records of a database from before the daily aggregate into it when upgrading", () => {
    const { file, old } = callsRecordedAt([
      "2026-01-01T23:59:59.999Z",
      "2026-01-02T00:00:00Z",
      "2026-01-02T12:00:00Z",
    ]);
    const byDay = old.ledger.getUsageSummary(caller(), { groupBy: ["day"] });
    // The schema as released before usage/002: records only.
    old.db.exec(`DROP TABLE usage_daily; DROP INDEX usage_records_tenant_run;
      DELETE FROM schema_migrations WHERE id = 'usage/002-daily'`);
    old.db.close();

    const upgraded = harness({ file });
    expect(upgraded.db.prepare("SELECT TOTAL(calls) FROM usage_daily").pluck().get()).toBe(3);
    expect(upgraded.ledger.getUsageSummary(caller(), { groupBy: ["day"] })).toEqual(byDay);
  });

  it("sums the records of a database from before the hourly and per-minute aggregates into them when upgrading", () => {
    const { file, old } = callsRecordedAt([
      "2026-01-01T09:59:59.999Z",
      "2026-01-01T10:00:00Z",
      "2026-01-01T10:00:30Z",
    ]);
    const partialDay = { since: new Date("2026-01-01T09:59:00Z"), until: new Date("2026-01-01T11:00:00Z") };
    const before = old.ledger.getUsageSummary(caller(), partialDay);
    // The schema as released before usage/003: no hourly or per-minute aggregate.
    old.db.exec(`DROP TABLE usage_hourly; DROP TABLE usage_minutely;
      DELETE FROM schema_migrations WHERE id = 'usage/003-hourly-minutely'`);
    old.db.close();

    const upgraded = harness({ file });
    const callsOf = (table: string) =>
      upgraded.db.prepare(`SELECT calls FROM ${table} ORDER BY occurred_at_ms`).pluck().all();
    expect(callsOf("usage_hourly")).toEqual([1, 2]);
    expect(callsOf("usage_minutely")).toEqual([1, 2]);
    expect(upgraded.ledger.getUsageSummary(caller(), partialDay)).toEqual(before);
    expect(before.totals.inputTokens).toBe(111);
  });
});
