/**
 * Usage ledger benchmark: `node --import tsx bench/usage.ts`.
 * In-process cost of one RecordUsage (validate, price, insert, usage_recorded event) on a real SQLite
 * file with the server's event log attached, of GetUsageSummary over what was recorded, and of the
 * retention batches that roll those records up per day.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ANONYMOUS_CALLER, type Caller } from "../src/caller/caller.ts";
import { EventLog } from "../src/events/index.ts";
import { openDatabase } from "../src/store/database.ts";
import { allMigrations } from "../src/store/migrations.ts";
import { UsageLedger } from "../src/usage/index.ts";

const RECORDS = 20_000;
const WARM_UP = 2_000;

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-usage-"));
try {
  const db = openDatabase(join(dir, "wayfind.db"), allMigrations);
  const events = new EventLog(db, { pruneIntervalMs: 0 });
  const ledger = new UsageLedger({ db, events });
  const callerOf = (i: number): Caller => ({
    ...ANONYMOUS_CALLER,
    tenantId: `tenant-${i % 10}`,
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
  const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
  console.log(`RecordUsage, ${RECORDS} new records (in-process, file DB, event log attached)`);
  console.log(`  mean ${us(elapsed / RECORDS)}  p50 ${us(percentile(latencies, 50))}`);
  console.log(`  p99 ${us(percentile(latencies, 99))}  max ${us(latencies.at(-1) ?? 0)}`);

  const summaryStarted = performance.now();
  const summaries = 200;
  for (let i = 0; i < summaries; i++) ledger.getUsageSummary(callerOf(i), { groupBy: ["model", "day"] });
  console.log(
    `GetUsageSummary by model+day over ${(RECORDS + WARM_UP) / 10} records of a tenant: mean ${us(
      (performance.now() - summaryStarted) / summaries,
    )}`,
  );

  // Retention: the same records, 2 days later, with a 1-day retention, rolled up batch by batch.
  const later = new UsageLedger({ db, events, now: () => Date.now() + 2 * 86_400_000, retentionDays: 1 });
  const batches: number[] = [];
  for (let more = true; more; ) {
    const t0 = performance.now();
    more = later.rollUpExpired().more;
    batches.push(performance.now() - t0);
  }
  batches.sort((a, b) => a - b);
  const batchMean = batches.reduce((sum, ms) => sum + ms, 0) / batches.length;
  console.log(
    `Retention: ${RECORDS + WARM_UP} records rolled up in ${batches.length} batches: ` +
      `mean ${batchMean.toFixed(2)} ms, max ${(batches.at(-1) ?? 0).toFixed(2)} ms per batch`,
  );
  const rolledStarted = performance.now();
  for (let i = 0; i < summaries; i++) later.getUsageSummary(callerOf(i), { groupBy: ["model", "day"] });
  console.log(
    `GetUsageSummary by model+day over the rollups: mean ${us((performance.now() - rolledStarted) / summaries)}`,
  );
  events.close();
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
