import type pg from "pg";
import type { Db } from "../database/sqlite.ts";
import {
  AGGREGATE_SUMS,
  AGGREGATES_BY_PERIOD,
  DAY_MS,
  periodOfRecord,
  SUMS_OF_GROUPED_RECORDS,
} from "./aggregates.ts";
import {
  createPartition,
  RECORD_COLUMNS,
  ROLLUP_BY_WHO,
  ROLLUP_SUMS,
  ROLLUP_TABLES,
  rollupKey,
} from "./postgres-schema.ts";

/**
 * A SQLite usage ledger (one server's data folder) moved into the shared PostgreSQL ledger of a new
 * fleet (wayfind storage copy-to-postgres): every record with its id, times and prices as recorded,
 * its idempotency key, and the rollups, so summaries and retried keys answer as before.
 */

/** Record columns copied as they are: what the ledger writes, plus the id and time it gave. */
const COPIED_COLUMNS = [["id", "bigint"], ...RECORD_COLUMNS, ["recorded_at_ms", "bigint"]] as const;

/** Rows sent per statement: bounded parameters, and memory of one batch whatever the ledger's size. */
const BATCH_ROWS = 2_000;

const RECORDED_ON = "(to_timestamp(recorded_at_ms / 1000.0) AT TIME ZONE 'UTC')::date";

const INSERT_RECORDS = (() => {
  const names = COPIED_COLUMNS.map(([name]) => name).join(", ");
  const arrays = COPIED_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ");
  return `WITH inserted AS (
       INSERT INTO wayfind_usage_records (${names}, recorded_on)
       SELECT *, ${RECORDED_ON} FROM unnest(${arrays}) AS r(${names})
       RETURNING tenant_id, idempotency_key, id, recorded_at_ms, recorded_on)
     INSERT INTO wayfind_usage_keys (tenant_id, idempotency_key, record_id, recorded_at_ms, recorded_on)
     SELECT * FROM inserted`;
})();

/** The daily rollup by project and user, summed from the records just copied. */
const DAILY_FROM_RECORDS = (() => {
  const key = rollupKey(true);
  const period = periodOfRecord(DAY_MS);
  return `INSERT INTO ${ROLLUP_TABLES.usage_daily} (${[...key, ...Object.keys(ROLLUP_SUMS)].join(", ")})
    SELECT ${key.map((column) => (column === "occurred_at_ms" ? period : column)).join(", ")},
      ${Object.values(ROLLUP_SUMS).join(", ")}
    FROM wayfind_usage_records GROUP BY ${key.map((_, i) => i + 1).join(", ")}`;
})();

/**
 * What a SQLite day holds beyond its retained records (retention deleted the rest and kept the day's
 * sums): added to the day's rollup with no project or user, which those records no longer tell.
 */
const EXPIRED_PER_DAY = `SELECT d.tenant_id, d.occurred_at_ms, d.provider, d.model,
    d.calls - coalesce(r.calls, 0) AS calls,
    ${AGGREGATE_SUMS.map((column) => `d.${column} - coalesce(r.${column}, 0) AS ${column}`).join(", ")}
  FROM usage_daily d LEFT JOIN (
    SELECT tenant_id, ${periodOfRecord(DAY_MS)} AS day, provider, model, ${SUMS_OF_GROUPED_RECORDS}
    FROM usage_records GROUP BY 1, 2, 3, 4) r
    ON r.tenant_id = d.tenant_id AND r.day = d.occurred_at_ms AND r.provider = d.provider AND r.model = d.model
  WHERE d.calls > coalesce(r.calls, 0)`;

/** A rollup row without project and user, as SQLite's aggregate tables (and EXPIRED_PER_DAY) hold it. */
const ROLLUP_COLUMNS = ["tenant_id", "occurred_at_ms", "provider", "model", "calls", ...AGGREGATE_SUMS];

/** Rows of a rollup without project and user (hours, minutes, expired days), added to what is there. */
function addRollupRows(table: string, byWho: boolean): string {
  const key = rollupKey(byWho);
  const types = ROLLUP_COLUMNS.map((column) =>
    ["tenant_id", "provider", "model"].includes(column)
      ? "text"
      : ["cost_usd", "uncached_cost_usd"].includes(column)
        ? "float8"
        : "bigint",
  );
  const who = byWho ? ", '', ''" : "";
  const whoColumns = byWho ? ", project_id, user_id" : "";
  return `INSERT INTO ${table} AS period (${ROLLUP_COLUMNS.join(", ")}${whoColumns})
    SELECT *${who} FROM unnest(${types.map((type, i) => `$${i + 1}::${type}[]`).join(", ")})
    ON CONFLICT (${key.join(", ")}) DO UPDATE SET
      ${["calls", ...AGGREGATE_SUMS].map((column) => `${column} = period.${column} + excluded.${column}`).join(", ")}`;
}

/** Runs `statement` over the rows of `rows` in batches, each sent as one array per column. */
async function inBatches(
  client: pg.PoolClient,
  statement: string,
  columns: readonly string[],
  rows: Iterable<Record<string, unknown>>,
): Promise<number> {
  let batch: unknown[][] = columns.map(() => []);
  let count = 0;
  const send = async () => {
    if ((batch[0]?.length ?? 0) > 0) await client.query(statement, batch);
    batch = columns.map(() => []);
  };
  for (const row of rows) {
    columns.forEach((column, i) => {
      batch[i]?.push(row[column] ?? null);
    });
    count++;
    if (count % BATCH_ROWS === 0) await send();
  }
  await send();
  return count;
}

/**
 * Copies the ledger of `db` into the shared tables, in `client`'s transaction (the tables exist and
 * hold nothing yet). Returns how many records were copied.
 */
export async function copyUsageToPostgres(db: Db, client: pg.PoolClient): Promise<number> {
  const days = db
    .prepare<[], { day: number }>(
      `SELECT DISTINCT recorded_at_ms - (((recorded_at_ms % ${DAY_MS}) + ${DAY_MS}) % ${DAY_MS}) AS day
       FROM usage_records`,
    )
    .all();
  for (const { day } of days) await client.query(createPartition(day));
  const recordColumns = COPIED_COLUMNS.map(([name]) => name);
  const records = await inBatches(
    client,
    INSERT_RECORDS,
    recordColumns,
    db.prepare(`SELECT ${recordColumns.join(", ")} FROM usage_records ORDER BY id`).iterate() as Iterable<
      Record<string, unknown>
    >,
  );
  if (records > 0)
    await client.query(
      "SELECT setval('wayfind_usage_record_ids', (SELECT max(id) FROM wayfind_usage_records))",
    );
  await client.query(DAILY_FROM_RECORDS);
  const expired = db.prepare(EXPIRED_PER_DAY).iterate() as Iterable<Record<string, unknown>>;
  await inBatches(client, addRollupRows(ROLLUP_TABLES.usage_daily, true), ROLLUP_COLUMNS, expired);
  // Hours and minutes on SQLite sum exactly the retained records: copied as they are.
  for (const { table } of AGGREGATES_BY_PERIOD) {
    if (ROLLUP_BY_WHO[table]) continue;
    const rows = db.prepare(`SELECT ${ROLLUP_COLUMNS.join(", ")} FROM ${table}`).iterate();
    await inBatches(client, addRollupRows(ROLLUP_TABLES[table], false), ROLLUP_COLUMNS, rows as never);
  }
  return records;
}
