import type pg from "pg";
import type { Caller } from "../caller/caller.ts";
import { WayfindError } from "../errors.ts";
import type { SharedDatabase, SharedOutcome, SharedWrite } from "../replication/writes.ts";
import { AGGREGATES_BY_PERIOD, DAY_MS, periodOfRecord } from "./aggregates.ts";
import {
  duplicateResult,
  prepareUsageRecord,
  type RecordRow,
  type RecordUsageInput,
  type RecordUsageResult,
  type UsageBook,
  type UsageRecordChange,
  usageRecordedEvent,
} from "./ledger.ts";
import {
  RECORD_COLUMNS,
  ROLLUP_BY_WHO,
  ROLLUP_SUMS,
  ROLLUP_TABLES,
  rollupKey,
  USAGE_POSTGRES_MIGRATIONS,
  utcDate,
} from "./postgres-schema.ts";
import type { PricingTable } from "./pricing.ts";
import {
  checkRecordsScanned,
  recordsToCount,
  type SummaryDialect,
  summaryOf,
  summaryQueries,
  type TotalsRow,
  type UsageSummary,
  type UsageSummaryFilter,
} from "./summary.ts";

export interface PostgresLedgerOptions {
  readonly shared: SharedDatabase;
  readonly pricing: PricingTable;
  /** A key is remembered this many days after it was recorded (usage.retention_days). */
  readonly retentionDays: number | undefined;
  /** Clock in epoch ms for validation (occurred_at not too far ahead); records are stamped by PostgreSQL's. */
  readonly now?: () => number;
}

/** Summaries on PostgreSQL: the same plan as on SQLite, read from the shared tables. */
const POSTGRES_SUMMARIES: SummaryDialect = {
  records: "wayfind_usage_records",
  aggregates: ROLLUP_TABLES,
  day: "to_char(to_timestamp(occurred_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
  unknownCost: "(cost_usd IS NULL)::int",
  // float8: a bigint sum is numeric, which the driver returns as a string.
  sum: (column) => `SUM(${column})::float8`,
  // Day partitions a window's records can be in: recorded at most a day before they occurred (occurred_at
  // is at most 24 h ahead), and never after today (with a day for clocks that differ).
  recordsIn: ({ since }) => ({
    clauses: "recorded_on >= ?::date AND recorded_on <= ?::date",
    params: [utcDate(Math.max(0, (since ?? 0) - 2 * DAY_MS)), utcDate(Date.now() + DAY_MS)],
  }),
};

/**
 * Summary statements come in a few dozen shapes, and planning one over every day partition can cost
 * more than running it: each is prepared once per connection, and PostgreSQL keeps one plan for all
 * values when it is as good (not when one tenant has most of the records: it plans each call then).
 */
const PREPARED = { prepared: true };

/** One statement: claims the batch's keys, inserts the records of those claimed, adds them to the rollups. */
const STORE_BATCH = (() => {
  const n = RECORD_COLUMNS.length;
  const names = RECORD_COLUMNS.map(([name]) => name);
  const rollups = AGGREGATES_BY_PERIOD.map(({ table, periodMs }) => {
    const key = rollupKey(ROLLUP_BY_WHO[table]);
    const period = periodOfRecord(periodMs);
    const sums = Object.keys(ROLLUP_SUMS);
    const positions = key.map((_, i) => i + 1).join(", ");
    // Sorted, so concurrent batches lock the rows they share in one order and never deadlock.
    return `${table} AS (
       INSERT INTO ${ROLLUP_TABLES[table]} AS period (${[...key, ...sums].join(", ")})
       SELECT ${key.map((c) => (c === "occurred_at_ms" ? period : c)).join(", ")}, ${Object.values(ROLLUP_SUMS).join(", ")}
       FROM inserted GROUP BY ${positions} ORDER BY ${positions}
       ON CONFLICT (${key.join(", ")}) DO UPDATE SET
         ${sums.map((c) => `${c} = period.${c} + excluded.${c}`).join(", ")})`;
  });
  return `WITH batch AS (
       SELECT * FROM unnest(${RECORD_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")})
         AS b(${names.join(", ")})),
     clock AS (SELECT floor(extract(epoch FROM now()) * 1000)::bigint AS now_ms),
     -- Keys in sorted order, for the same reason as the rollups. A key recorded within retention
     -- stays; one past it is claimed again, as if never recorded.
     claimed AS (
       INSERT INTO wayfind_usage_keys AS k (tenant_id, idempotency_key, record_id, recorded_at_ms, recorded_on)
       SELECT tenant_id, idempotency_key, nextval('wayfind_usage_record_ids'), now_ms,
         (to_timestamp(now_ms / 1000.0) AT TIME ZONE 'UTC')::date
       FROM batch, clock ORDER BY tenant_id, idempotency_key
       ON CONFLICT (tenant_id, idempotency_key) DO UPDATE SET record_id = excluded.record_id,
         recorded_at_ms = excluded.recorded_at_ms, recorded_on = excluded.recorded_on
         WHERE k.recorded_at_ms < excluded.recorded_at_ms - $${n + 1}::bigint
       RETURNING tenant_id, idempotency_key, record_id, recorded_at_ms, recorded_on),
     inserted AS (
       INSERT INTO wayfind_usage_records (id, ${names.join(", ")}, recorded_at_ms, recorded_on)
       SELECT c.record_id, ${names
         .filter((c) => c !== "occurred_at_ms")
         .map((c) => `b.${c}`)
         .join(", ")},
         coalesce(b.occurred_at_ms, c.recorded_at_ms), c.recorded_at_ms, c.recorded_on
       FROM batch b JOIN claimed c USING (tenant_id, idempotency_key)
       RETURNING id, tenant_id, idempotency_key, occurred_at_ms, project_id, user_id, provider, model,
         ${["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation_1h_input_tokens", "rate_limit_input_tokens", "cost_usd", "uncached_cost_usd", "recorded_at_ms"].join(", ")}),
     ${rollups.join(",\n     ")}
   SELECT id::float8 AS id, tenant_id, idempotency_key, occurred_at_ms::float8 AS occurred_at_ms,
     recorded_at_ms::float8 AS recorded_at_ms
   FROM inserted`;
})();

/** A retried key's first record, as duplicateResult compares it. */
const STORED_BY_KEY = `SELECT k.tenant_id, k.idempotency_key, r.id::float8 AS id, r.recorded_at_ms::float8 AS recorded_at_ms,
     r.request_json, r.cost_usd, r.uncached_cost_usd, r.unknown_cost_reason, r.occurred_at_ms::float8 AS occurred_at_ms
   FROM wayfind_usage_keys k
   JOIN wayfind_usage_records r ON r.id = k.record_id AND r.recorded_on = k.recorded_on
   WHERE (k.tenant_id, k.idempotency_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`;

interface StoredRow extends RecordRow {
  tenant_id: string;
  idempotency_key: string;
}

/**
 * The usage ledger of a fleet of replicas, kept once in the shared PostgreSQL (docs/replicas.md "The
 * usage ledger") instead of in every replica's copy. A record, its rollups and the change carrying
 * its `usage_recorded` event commit in one transaction, so every replica still stores the event, in
 * the log's order, and a retry is answered exactly as by the SQLite ledger.
 */
export class PostgresLedger implements UsageBook {
  private readonly options: PostgresLedgerOptions;
  private readonly retentionMs: number | undefined;
  private readonly now: () => number;

  private constructor(options: PostgresLedgerOptions) {
    this.options = options;
    this.retentionMs = options.retentionDays === undefined ? undefined : options.retentionDays * DAY_MS;
    this.now = options.now ?? Date.now;
  }

  /** The ledger on `shared`, its tables created or upgraded first. */
  static async open(options: PostgresLedgerOptions): Promise<PostgresLedger> {
    await options.shared.migrate(USAGE_POSTGRES_MIGRATIONS);
    return new PostgresLedger(options);
  }

  /** Records one model call, answered as UsageLedger.recordUsage answers (see there). */
  record(caller: Caller, input: RecordUsageInput): Promise<RecordUsageResult> {
    const record = prepareUsageRecord(caller, input, this.options.pricing, this.now());
    return this.options.shared.writeShared(this.write, record, caller.tenantId);
  }

  /** Tenants that recorded usage, in order, after `after` (at most `limit`): one index seek each. */
  async tenants(after: string, limit: number): Promise<string[]> {
    const rows = await this.options.shared.query<{ tenant_id: string }>(
      `WITH RECURSIVE next(tenant_id, n) AS (
         SELECT (SELECT MIN(tenant_id) FROM ${ROLLUP_TABLES.usage_daily} WHERE tenant_id > $1), 1
         UNION ALL
         SELECT (SELECT MIN(tenant_id) FROM ${ROLLUP_TABLES.usage_daily} WHERE tenant_id > next.tenant_id), n + 1
         FROM next WHERE next.tenant_id IS NOT NULL AND n < $2
       )
       SELECT tenant_id FROM next WHERE tenant_id IS NOT NULL`,
      [after, limit],
    );
    return rows.map((row) => row.tenant_id);
  }

  /** The caller's tenant's totals and groups, as UsageLedger.getUsageSummary computes them. */
  async summary(caller: Caller, filter: UsageSummaryFilter): Promise<UsageSummary> {
    const queries = summaryQueries(caller, filter, POSTGRES_SUMMARIES);
    const { shared } = this.options;
    let scanned = 0;
    for (const count of queries.recordCounts) {
      const [row] = await shared.query<{ calls: string }>(
        numbered(count.sql),
        [...count.params, recordsToCount(scanned)],
        PREPARED,
      );
      scanned += Number(row?.calls ?? 0);
    }
    checkRecordsScanned(scanned, queries.needsRecords);
    const [totals] = await shared.query<TotalsRow>(
      numbered(queries.totals.sql),
      queries.totals.params,
      PREPARED,
    );
    const groups = queries.groups
      ? await shared.query<TotalsRow>(numbered(queries.groups.sql), queries.groups.params, PREPARED)
      : [];
    return summaryOf(queries, totals, groups);
  }

  private readonly write: SharedWrite<UsageRecordChange, RecordUsageResult> = {
    writeBatch: (client, records) => this.storeBatch(client, records),
  };

  /**
   * Stores the records of one append in one statement (STORE_BATCH): each key is claimed in the keys
   * table, where a key another writer holds waits for its commit; the records of the keys claimed are
   * inserted and summed into every rollup. Keys already recorded are read back in one more query and
   * answered as retries.
   */
  private async storeBatch(
    client: pg.PoolClient,
    records: readonly UsageRecordChange[],
  ): Promise<SharedOutcome<RecordUsageResult>[]> {
    // A key twice in one batch: the first is stored, the later ones are its retries.
    const firsts = new Map<string, UsageRecordChange>();
    for (const record of records) {
      const key = keyOf(record.tenantId, record.idempotencyKey);
      if (!firsts.has(key)) firsts.set(key, record);
    }
    const columns: unknown[][] = RECORD_COLUMNS.map(() => []);
    for (const r of firsts.values()) {
      const values = [
        r.tenantId,
        r.idempotencyKey,
        r.request,
        r.projectId,
        r.userId,
        r.sessionId,
        r.runId,
        r.provider,
        r.model,
        ...r.tokenCounts,
        r.costUsd,
        r.uncachedCostUsd,
        r.unknownCostReason,
        r.occurredAtMs,
      ];
      values.forEach((value, i) => {
        columns[i]?.push(value);
      });
    }
    const retentionMs = this.retentionMs ?? Number.MAX_SAFE_INTEGER;
    const { rows: inserted } = await client.query<{
      id: number;
      tenant_id: string;
      idempotency_key: string;
      occurred_at_ms: number;
      recorded_at_ms: number;
    }>({ name: "wf_store_usage_batch", text: STORE_BATCH, values: [...columns, retentionMs] });
    const outcomes = new Map<UsageRecordChange, SharedOutcome<RecordUsageResult>>();
    for (const row of inserted) {
      const record = firsts.get(keyOf(row.tenant_id, row.idempotency_key));
      if (record === undefined) throw new Error("PostgreSQL inserted a usage record this batch did not hold");
      const { costUsd, uncachedCostUsd, unknownCostReason } = record;
      outcomes.set(record, {
        ok: true,
        value: {
          recordId: row.id,
          costUsd,
          uncachedCostUsd,
          ...(unknownCostReason ? { unknownCostReason } : {}),
          duplicate: false,
          occurredAt: new Date(row.occurred_at_ms),
        },
        events: [usageRecordedEvent(record, row.id)],
      });
    }
    const retried = records.filter((record) => !outcomes.has(record));
    const stored = new Map<string, RecordRow>();
    if (retried.length > 0) {
      const { rows } = await client.query<StoredRow>({
        name: "wf_usage_by_key",
        text: STORED_BY_KEY,
        values: [retried.map((r) => r.tenantId), retried.map((r) => r.idempotencyKey)],
      });
      for (const row of rows) stored.set(keyOf(row.tenant_id, row.idempotency_key), row);
    }
    return records.map((record) => {
      const outcome = outcomes.get(record);
      if (outcome) return outcome;
      const first = firsts.get(keyOf(record.tenantId, record.idempotencyKey));
      const fresh = first && outcomes.get(first);
      const existing: RecordRow | undefined =
        fresh?.ok === true
          ? {
              id: fresh.value.recordId,
              recorded_at_ms: 0,
              request_json: first?.request ?? "",
              cost_usd: fresh.value.costUsd,
              uncached_cost_usd: fresh.value.uncachedCostUsd,
              unknown_cost_reason: fresh.value.unknownCostReason ?? null,
              occurred_at_ms: fresh.value.occurredAt.getTime(),
            }
          : stored.get(keyOf(record.tenantId, record.idempotencyKey));
      if (existing === undefined) throw new Error("a usage key was neither stored before nor inserted now");
      try {
        return { ok: true, value: duplicateResult(existing, record.request), events: [] };
      } catch (error) {
        if (error instanceof WayfindError) return { ok: false, error };
        throw error;
      }
    });
  }
}

function keyOf(tenantId: string, idempotencyKey: string): string {
  return `${tenantId.length}:${tenantId}${idempotencyKey}`;
}

/** `?` placeholders (the SQLite spelling summaryQueries writes) as PostgreSQL's $1, $2, … */
function numbered(sql: string): string {
  let n = 0;
  return sql.replaceAll("?", () => `$${++n}`);
}
