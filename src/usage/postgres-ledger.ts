import type pg from "pg";
import type { Caller } from "../caller/caller.ts";
import { WayfindError } from "../errors.ts";
import type { SharedDatabase, SharedOutcome, SharedWrite } from "../replication/writes.ts";
import { AGGREGATE_SUMS, AGGREGATES_BY_PERIOD, DAY_MS, floorTo } from "./aggregates.ts";
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
import { ROLLUP_TABLES, USAGE_POSTGRES_MIGRATIONS, utcDate } from "./postgres-schema.ts";
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
};

/** The two-key advisory lock namespace of idempotency keys (the other key is the key's hash). */
const KEY_LOCK_NAMESPACE = 0x77617968;

/** Record columns in the order storeBatch inserts them, with their PostgreSQL array types. */
const RECORD_COLUMNS = [
  ["tenant_id", "text"],
  ["idempotency_key", "text"],
  ["request_json", "text"],
  ["project_id", "text"],
  ["user_id", "text"],
  ["session_id", "text"],
  ["run_id", "text"],
  ["provider", "text"],
  ["model", "text"],
  ["input_tokens", "bigint"],
  ["output_tokens", "bigint"],
  ["cache_read_input_tokens", "bigint"],
  ["cache_creation_input_tokens", "bigint"],
  ["cache_creation_1h_input_tokens", "bigint"],
  ["rate_limit_input_tokens", "bigint"],
  ["cost_usd", "float8"],
  ["uncached_cost_usd", "float8"],
  ["unknown_cost_reason", "text"],
  ["occurred_at_ms", "bigint"],
] as const;

/** Rollup key columns, then calls and AGGREGATE_SUMS: the order rollupRows builds rows in. */
const ROLLUP_KEY = ["tenant_id", "occurred_at_ms", "project_id", "user_id", "provider", "model"] as const;
const ROLLUP_TYPES = ["text", "bigint", "text", "text", "text", "text", "bigint"];

interface StoredRow {
  id: number;
  tenant_id: string;
  idempotency_key: string;
  recorded_at_ms: number;
  request_json: string;
  cost_usd: number | null;
  uncached_cost_usd: number | null;
  unknown_cost_reason: string | null;
  occurred_at_ms: number;
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

  /** The caller's tenant's totals and groups, as UsageLedger.getUsageSummary computes them. */
  async summary(caller: Caller, filter: UsageSummaryFilter): Promise<UsageSummary> {
    const queries = summaryQueries(caller, filter, POSTGRES_SUMMARIES);
    const { shared } = this.options;
    let scanned = 0;
    for (const count of queries.recordCounts) {
      const [row] = await shared.query<{ calls: string }>(numbered(count.sql), [
        ...count.params,
        recordsToCount(scanned),
      ]);
      scanned += Number(row?.calls ?? 0);
    }
    checkRecordsScanned(scanned, queries.needsRecords);
    const [totals] = await shared.query<TotalsRow>(numbered(queries.totals.sql), queries.totals.params);
    const groups = queries.groups
      ? await shared.query<TotalsRow>(numbered(queries.groups.sql), queries.groups.params)
      : [];
    return summaryOf(queries, totals, groups);
  }

  private readonly write: SharedWrite<UsageRecordChange, RecordUsageResult> = {
    writeBatch: (client, records) => this.storeBatch(client, records),
  };

  /**
   * Stores the records of one append: each key locked (so a key is checked and inserted by one writer
   * at a time, on any replica), the keys recorded before read back in one query, the new records
   * inserted in one statement and summed into each rollup in one more. Locks are taken in a fixed
   * order (keys sorted, then rollup rows sorted), so concurrent appends never deadlock.
   */
  private async storeBatch(
    client: pg.PoolClient,
    records: readonly UsageRecordChange[],
  ): Promise<SharedOutcome<RecordUsageResult>[]> {
    const tenants = records.map((r) => r.tenantId);
    const keys = records.map((r) => r.idempotencyKey);
    const { rows: clock } = await client.query<{ now_ms: number }>(
      `SELECT floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms,
         count(pg_advisory_xact_lock(${KEY_LOCK_NAMESPACE}, h)) AS locked
       FROM (SELECT DISTINCT hashtext(length(t) || ':' || t || k) AS h
             FROM unnest($1::text[], $2::text[]) AS u(t, k) ORDER BY 1) AS keys`,
      [tenants, keys],
    );
    const nowMs = Number(clock[0]?.now_ms);
    // Keys recorded within retention, newest first: past it a key counts again, as on SQLite.
    const cutoffMs = this.retentionMs === undefined ? 0 : nowMs - this.retentionMs;
    const { rows: stored } = await client.query<StoredRow>(
      `SELECT DISTINCT ON (tenant_id, idempotency_key) id::float8 AS id, tenant_id, idempotency_key,
         recorded_at_ms::float8 AS recorded_at_ms, request_json, cost_usd, uncached_cost_usd,
         unknown_cost_reason, occurred_at_ms::float8 AS occurred_at_ms
       FROM wayfind_usage_records
       WHERE (tenant_id, idempotency_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
         AND recorded_on >= $3::date AND recorded_at_ms >= $4
       ORDER BY tenant_id, idempotency_key, recorded_at_ms DESC`,
      [tenants, keys, utcDate(Math.max(0, cutoffMs)), cutoffMs],
    );
    const known = new Map<string, RecordRow>(
      stored.map((row) => [keyOf(row.tenant_id, row.idempotency_key), row]),
    );

    // A key new to the ledger is inserted for its first payload; later ones in the batch are retries of it.
    const fresh: UsageRecordChange[] = [];
    const freshKeys = new Set<string>();
    for (const record of records) {
      const key = keyOf(record.tenantId, record.idempotencyKey);
      if (known.has(key) || freshKeys.has(key)) continue;
      freshKeys.add(key);
      fresh.push(record);
    }
    const ids = await this.insertRecords(client, fresh, nowMs);
    const outcomes = new Map<UsageRecordChange, SharedOutcome<RecordUsageResult>>();
    for (const record of fresh) {
      const key = keyOf(record.tenantId, record.idempotencyKey);
      const id = ids.get(key);
      if (id === undefined) throw new Error(`usage key ${key} was not inserted (recorded concurrently?)`);
      const occurredAtMs = record.occurredAtMs ?? nowMs;
      known.set(key, {
        id,
        recorded_at_ms: nowMs,
        request_json: record.request,
        cost_usd: record.costUsd,
        uncached_cost_usd: record.uncachedCostUsd,
        unknown_cost_reason: record.unknownCostReason,
        occurred_at_ms: occurredAtMs,
      });
      const { costUsd, uncachedCostUsd, unknownCostReason } = record;
      outcomes.set(record, {
        ok: true,
        value: {
          recordId: id,
          costUsd,
          uncachedCostUsd,
          ...(unknownCostReason ? { unknownCostReason } : {}),
          duplicate: false,
          occurredAt: new Date(occurredAtMs),
        },
        events: [usageRecordedEvent(record, id)],
      });
    }
    for (const { table, periodMs } of AGGREGATES_BY_PERIOD) {
      await upsertRollup(client, ROLLUP_TABLES[table], rollupRows(fresh, periodMs, nowMs));
    }
    return records.map((record) => {
      const outcome = outcomes.get(record);
      if (outcome) {
        outcomes.delete(record);
        return outcome;
      }
      const existing = known.get(keyOf(record.tenantId, record.idempotencyKey));
      if (existing === undefined) throw new Error("a usage key was neither stored nor inserted");
      try {
        return { ok: true, value: duplicateResult(existing, record.request), events: [] };
      } catch (error) {
        if (error instanceof WayfindError) return { ok: false, error };
        throw error;
      }
    });
  }

  /** Inserts `records` in one statement; returns their ids by keyOf. */
  private async insertRecords(
    client: pg.PoolClient,
    records: readonly UsageRecordChange[],
    nowMs: number,
  ): Promise<Map<string, number>> {
    if (records.length === 0) return new Map();
    const columns: unknown[][] = RECORD_COLUMNS.map(() => []);
    for (const r of records) {
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
        r.occurredAtMs ?? nowMs,
      ];
      values.forEach((value, i) => {
        columns[i]?.push(value);
      });
    }
    const n = RECORD_COLUMNS.length;
    const { rows } = await client.query<{ id: number; tenant_id: string; idempotency_key: string }>(
      `INSERT INTO wayfind_usage_records (${RECORD_COLUMNS.map(([name]) => name).join(", ")},
         recorded_at_ms, recorded_on)
       SELECT *, $${n + 1}::bigint, $${n + 2}::date
       FROM unnest(${RECORD_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")})
       ON CONFLICT DO NOTHING
       RETURNING id::float8 AS id, tenant_id, idempotency_key`,
      [...columns, nowMs, utcDate(nowMs)],
    );
    return new Map(rows.map((row) => [keyOf(row.tenant_id, row.idempotency_key), row.id]));
  }
}

/** The sums of `records` by rollup key at `periodMs`, sorted by key (the order rows are locked in). */
function rollupRows(records: readonly UsageRecordChange[], periodMs: number, nowMs: number): unknown[][] {
  const rows = new Map<string, unknown[]>();
  for (const r of records) {
    const key = [
      r.tenantId,
      floorTo(r.occurredAtMs ?? nowMs, periodMs),
      r.projectId,
      r.userId,
      r.provider,
      r.model,
    ];
    const id = JSON.stringify(key);
    const sums = [1, ...r.tokenCounts, r.costUsd ?? 0, r.costUsd === null ? 1 : 0, r.uncachedCostUsd ?? 0];
    const row = rows.get(id);
    if (row === undefined) rows.set(id, [...key, ...sums]);
    else
      sums.forEach((value, i) => {
        row[ROLLUP_KEY.length + i] = (row[ROLLUP_KEY.length + i] as number) + value;
      });
  }
  return [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

/** Adds `rows` (rollupRows) to `table` in one statement. */
async function upsertRollup(client: pg.PoolClient, table: string, rows: readonly unknown[][]): Promise<void> {
  if (rows.length === 0) return;
  const sums = ["calls", ...AGGREGATE_SUMS];
  const types = [
    ...ROLLUP_TYPES,
    ...AGGREGATE_SUMS.map((c) => (c.endsWith("cost_usd") ? "float8" : "bigint")),
  ];
  const columns = types.map((_, i) => rows.map((row) => row[i]));
  await client.query(
    `INSERT INTO ${table} AS period (${[...ROLLUP_KEY, ...sums].join(", ")})
     SELECT * FROM unnest(${types.map((type, i) => `$${i + 1}::${type}[]`).join(", ")})
     ON CONFLICT (${ROLLUP_KEY.join(", ")}) DO UPDATE SET
       ${sums.map((c) => `${c} = period.${c} + excluded.${c}`).join(", ")}`,
    columns,
  );
}

function keyOf(tenantId: string, idempotencyKey: string): string {
  return `${tenantId.length}:${tenantId}${idempotencyKey}`;
}

/** `?` placeholders (the SQLite spelling summaryQueries writes) as PostgreSQL's $1, $2, … */
function numbered(sql: string): string {
  let n = 0;
  return sql.replaceAll("?", () => `$${++n}`);
}
