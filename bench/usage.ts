/**
 * Usage ledger benchmark: `node --import tsx bench/usage.ts`.
 * In-process cost of one RecordUsage (validate, price, insert, daily aggregate, usage_recorded event)
 * on a real SQLite file with the server's event log attached, of GetUsageSummary over 200,000 records
 * of one tenant spread over 30 days, and of the retention batches that delete expired records.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ANONYMOUS_CALLER, type Caller } from "../src/caller/caller.ts";
import { EventLog } from "../src/events/index.ts";
import { allMigrations } from "../src/server/migrations.ts";
import { openDatabase } from "../src/store/database.ts";
import { UsageLedger, type UsageSummaryFilter } from "../src/usage/index.ts";

const RECORDS = 200_000;
const WARM_UP = 2_000;
const DAY_MS = 86_400_000;
const DAYS = 30;
/** Records spread evenly over the 30 whole UTC days before today. */
const FIRST_DAY_MS = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAYS * DAY_MS;

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

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

  // Retention: the same records, 2 days later, with a 1-day retention, deleted batch by batch.
  const later = new UsageLedger({ db, events, now: () => Date.now() + 2 * DAY_MS, retentionDays: 1 });
  const batches: number[] = [];
  for (let more = true; more; ) {
    const t0 = performance.now();
    more = later.pruneExpired().more;
    batches.push(performance.now() - t0);
  }
  batches.sort((a, b) => a - b);
  const batchMean = batches.reduce((sum, ms) => sum + ms, 0) / batches.length;
  console.log(
    `Retention: ${RECORDS + WARM_UP} records deleted in ${batches.length} batches: ` +
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
