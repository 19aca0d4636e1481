import type { SharedDatabase } from "../replication/writes.ts";
import { DAY_MS, floorTo } from "./aggregates.ts";
import { createPartition, partitionDay, utcDate } from "./postgres-schema.ts";

/** Days of partitions kept ready ahead of today, so a record never waits for one to be created. */
const DAYS_AHEAD = 7;
/** How often each replica checks (cheap when nothing is due); a missed round is made up by the next. */
const INTERVAL_MS = 60 * 60 * 1000;
/** Idempotency keys past retention deleted per statement. */
const KEYS_PER_DELETE = 10_000;
/** Advisory lock key: one replica maintains at a time. */
const MAINTAIN_LOCK = 0x77617969;

export interface PartitionReport {
  readonly created: number;
  readonly dropped: number;
  readonly minutesDeleted: number;
  readonly keysDeleted: number;
}

/**
 * Keeps wayfind_usage_records' day partitions ahead of need and drops those past retention, with
 * the per-minute rollup rows and the idempotency keys of the same age. Run at start (before the
 * first record) and hourly, off the request path; every replica runs it, one at a time, and finding
 * nothing to do is cheap.
 */
export async function maintainPartitions(
  shared: SharedDatabase,
  retentionDays: number | undefined,
): Promise<PartitionReport> {
  const { created, dropped, minutesDeleted, cutoffMs } = await shared.transaction(async (client) => {
    // Dropping a partition waits for summaries reading it; never long enough to queue records behind it.
    await client.query("SET LOCAL lock_timeout = '2s'");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MAINTAIN_LOCK]);
    const { rows: clock } = await client.query<{ now_ms: number }>(
      "SELECT floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms",
    );
    const nowMs = Number(clock[0]?.now_ms);
    const today = floorTo(nowMs, DAY_MS);
    const { rows: existing } = await client.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'wayfind_usage_records'::regclass`,
    );
    const days = new Set(existing.map((row) => partitionDay(row.name)));
    let created = 0;
    for (let day = today - DAY_MS; day <= today + DAYS_AHEAD * DAY_MS; day += DAY_MS) {
      if (days.has(day)) continue;
      await client.query(createPartition(day));
      created++;
    }
    if (retentionDays === undefined) return { created, dropped: 0, minutesDeleted: 0, cutoffMs: undefined };
    // A day is dropped once its last record is past retention (SQLite keys expire record by record).
    const cutoffMs = nowMs - retentionDays * DAY_MS;
    let dropped = 0;
    for (const { name } of existing) {
      const day = partitionDay(name);
      if (day === undefined || day + DAY_MS > cutoffMs) continue;
      await client.query(`DROP TABLE ${name}`);
      dropped++;
    }
    const minutes = await client.query(
      "DELETE FROM wayfind_usage_rollup_minutely WHERE occurred_at_ms < $1",
      [floorTo(cutoffMs, DAY_MS)],
    );
    return { created, dropped, minutesDeleted: minutes.rowCount ?? 0, cutoffMs };
  });
  let keysDeleted = 0;
  if (cutoffMs !== undefined) {
    // The keys of the days dropped, in short statements of their own, so a backlog never holds a
    // transaction open (a key past retention is claimed anew meanwhile anyway).
    for (;;) {
      const [deleted] = await shared.query<{ n: string }>(
        `WITH gone AS (DELETE FROM wayfind_usage_keys WHERE ctid IN (SELECT ctid FROM wayfind_usage_keys
           WHERE recorded_on < $1::date LIMIT ${KEYS_PER_DELETE}) RETURNING 1) SELECT count(*) AS n FROM gone`,
        [utcDate(floorTo(cutoffMs, DAY_MS))],
      );
      const n = Number(deleted?.n ?? 0);
      keysDeleted += n;
      if (n < KEYS_PER_DELETE) break;
    }
  }
  return { created, dropped, minutesDeleted, keysDeleted };
}

/** Runs maintainPartitions every hour until the returned function is called. */
export function startPartitionMaintenance(
  shared: SharedDatabase,
  retentionDays: number | undefined,
  handlers: { onReport: (report: PartitionReport) => void; onError: (error: unknown) => void },
): () => void {
  const timer = setInterval(() => {
    maintainPartitions(shared, retentionDays).then(handlers.onReport, handlers.onError);
  }, INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
