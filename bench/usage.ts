/**
 * Usage ledger benchmark: `node --import tsx bench/usage.ts`.
 * In-process cost of one RecordUsage (validate, price, insert, daily aggregate, usage_recorded event)
 * on a real SQLite file with the server's event log attached, of GetUsageSummary over 200,000 records
 * of one tenant spread over 30 days, of a summary whose window starts and ends inside a day of
 * DENSE_RECORDS records of another tenant, and of the retention batches that delete expired records.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ANONYMOUS_CALLER, type Caller } from "../src/caller/caller.ts";
import { openDatabase } from "../src/database/sqlite.ts";
import { EventLog } from "../src/events/index.ts";
import { allMigrations } from "../src/server/migrations.ts";
import { UsageLedger, type UsageSummaryFilter } from "../src/usage/index.ts";
import { percentile } from "./lib/stats.ts";

const RECORDS = 200_000;
/** One UTC day of another tenant's records: ~4.6 calls/s, ~16,700 an hour. */
const DENSE_RECORDS = 400_000;
const WARM_UP = 2_000;
const DAY_MS = 86_400_000;
const DAYS = 30;
/** Records spread evenly over the 30 whole UTC days before today. */
const FIRST_DAY_MS = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAYS * DAY_MS;

const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;

const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-usage-"));
try {
  const db = openDatabase(join(dir, "wayfind.db"), allMigrations);
  const events = new EventLog(db, { pruneIntervalMs: 0 });
  const ledger = new UsageLedger({ db, events });
  const callerOf = (i: number): Caller => ({
    ...ANONYMOUS_CALLER,
    tenantId: i < 0 ? "warm-up" : "tenant-0",
    sessionId: `session-${i % 500}`,
    runId: `run-${i}`,
  });
  const record = (i: number) =>
    ledger.recordUsage(callerOf(i), {
      provider: "anthropic",
      model: i % 3 === 0 ? "claude-haiku-4-5" : "claude-sonnet-4-5",
      usage: {
        inputTokens: 1000 + (i % 97),
        outputTokens: 200 + (i % 13),
        cacheReadInputTokens: 9000,
        cacheCreationInputTokens: i % 7 === 0 ? 2000 : 0,
      },
      idempotencyKey: `msg_${i}`,
      occurredAt: new Date(FIRST_DAY_MS + Math.floor((Math.abs(i) * DAYS * DAY_MS) / RECORDS)),
    });
  for (let i = 0; i < WARM_UP; i++) record(-1 - i);

  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < RECORDS; i++) {
    const t0 = performance.now();
    record(i);
    latencies.push(performance.now() - t0);
  }
  const elapsed = performance.now() - started;
  latencies.sort((a, b) => a - b);
  console.log(`RecordUsage, ${RECORDS} new records (in-process, file DB, event log attached)`);
  console.log(`  mean ${us(elapsed / RECORDS)}  p50 ${us(percentile(latencies, 50))}`);
  console.log(`  p99 ${us(percentile(latencies, 99))}  max ${us(latencies.at(-1) ?? 0)}`);

  const summaryMean = (label: string, filter: UsageSummaryFilter, runs: number) => {
    ledger.getUsageSummary(callerOf(0), filter); // prepares the statement
    const t0 = performance.now();
    for (let i = 0; i < runs; i++) ledger.getUsageSummary(callerOf(0), filter);
    console.log(`  ${label}: mean ${us((performance.now() - t0) / runs)}`);
  };
  const day = (n: number) => new Date(FIRST_DAY_MS + n * DAY_MS);
  console.log(`GetUsageSummary over ${RECORDS} records of a tenant, ${DAYS} days`);
  summaryMean("no window, by model+day", { groupBy: ["model", "day"] }, 20);
  summaryMean("10 whole days, totals", { since: day(10), until: day(20) }, 20);
  summaryMean("10 days from 12:00 to 12:00 (two half-day edges)", { since: day(10.5), until: day(20.5) }, 20);
  summaryMean("one session (400 records)", { sessionId: "session-7" }, 20);
  summaryMean("by session, one hour", { since: day(10), until: day(10 + 1 / 24), groupBy: ["session"] }, 20);

  // The dense day is the day before the 30: its tenant's summaries read nothing of tenant-0.
  const denseCaller: Caller = { ...ANONYMOUS_CALLER, tenantId: "dense", sessionId: "dense", runId: "dense" };
  const denseStarted = performance.now();
  for (let i = 0; i < DENSE_RECORDS; i++) {
    ledger.recordUsage(denseCaller, {
      provider: "anthropic",
      model: i % 3 === 0 ? "claude-haiku-4-5" : "claude-sonnet-4-5",
      usage: {
        inputTokens: 1000,
        outputTokens: 200,
        cacheReadInputTokens: 9000,
        cacheCreationInputTokens: 0,
      },
      idempotencyKey: `dense_${i}`,
      occurredAt: new Date(FIRST_DAY_MS - DAY_MS + Math.floor((i * DAY_MS) / DENSE_RECORDS)),
    });
  }
  console.log(
    `GetUsageSummary over a day of ${DENSE_RECORDS} records of one tenant ` +
      `(recorded at ${us((performance.now() - denseStarted) / DENSE_RECORDS)} each)`,
  );
  const denseSummary = (label: string, since: number, until: number) => {
    const filter = { since: day(since), until: day(until) };
    ledger.getUsageSummary(denseCaller, filter); // prepares the statement
    const t0 = performance.now();
    for (let i = 0; i < 5; i++) ledger.getUsageSummary(denseCaller, filter);
    console.log(`  ${label}: mean ${((performance.now() - t0) / 5).toFixed(2)} ms`);
  };
  denseSummary("10:20 to 19:40 (two partial-day edges)", -1 + 10.33 / 24, -1 + 19.67 / 24);
  denseSummary("10:20 to the next day 10:20", -1 + 10.33 / 24, 10.33 / 24);

  // Retention: the same records, 2 days later, with a 1-day retention, deleted batch by batch.
  const later = new UsageLedger({ db, events, now: () => Date.now() + 2 * DAY_MS, retentionDays: 1 });
  const batches: number[] = [];
  let pruned = 0;
  for (let more = true; more; ) {
    const t0 = performance.now();
    const batch = later.pruneExpired();
    batches.push(performance.now() - t0);
    pruned += batch.deleted;
    more = batch.more;
  }
  batches.sort((a, b) => a - b);
  const batchMean = batches.reduce((sum, ms) => sum + ms, 0) / batches.length;
  console.log(
    `Retention: ${pruned} records deleted in ${batches.length} batches: ` +
      `mean ${batchMean.toFixed(2)} ms, max ${(batches.at(-1) ?? 0).toFixed(2)} ms per batch`,
  );
  const t0 = performance.now();
  for (let i = 0; i < 20; i++) later.getUsageSummary(callerOf(0), { groupBy: ["model", "day"] });
  console.log(
    `GetUsageSummary by model+day once every record is pruned: mean ${us((performance.now() - t0) / 20)}`,
  );
  events.close();
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
