/**
 * The usage aggregates: per (tenant, UTC period, provider, model) sums of usage_records by day, hour
 * and minute, written in the record's transaction and (hours, minutes) pruned with retention. Summaries
 * read whole periods from them (summary.ts); this module says what they sum and how rows change.
 */

/**
 * What the aggregate tables sum besides calls, in the order addToAggregate takes them, each
 * with its sum over usage_records (a record's unknown cost counts as 0 and as one unknown-cost call).
 */
const SUMS_OF_RECORDS = {
  input_tokens: "SUM(input_tokens)",
  output_tokens: "SUM(output_tokens)",
  cache_read_input_tokens: "SUM(cache_read_input_tokens)",
  cache_creation_input_tokens: "SUM(cache_creation_input_tokens)",
  cache_creation_1h_input_tokens: "SUM(cache_creation_1h_input_tokens)",
  rate_limit_input_tokens: "SUM(rate_limit_input_tokens)",
  cost_usd: "TOTAL(cost_usd)",
  unknown_cost_calls: "SUM(cost_usd IS NULL)",
  uncached_cost_usd: "TOTAL(uncached_cost_usd)",
} as const;
export const AGGREGATE_SUMS = Object.keys(SUMS_OF_RECORDS);

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;
/**
 * Adds one record to its period's row of an aggregate table (AGGREGATES_BY_PERIOD), in the record's
 * transaction. Takes tenant, period start, provider, model, then AGGREGATE_SUMS.
 */
export function addToAggregate(table: string): string {
  return `INSERT INTO ${table} (tenant_id, occurred_at_ms, provider, model, calls, ${AGGREGATE_SUMS.join(", ")})
    VALUES (?, ?, ?, ?, 1, ${AGGREGATE_SUMS.map(() => "?").join(", ")})
    ON CONFLICT (tenant_id, occurred_at_ms, provider, model) DO UPDATE SET calls = calls + 1,
      ${AGGREGATE_SUMS.map((column) => `${column} = ${column} + excluded.${column}`).join(", ")}`;
}

/** The start of a record's UTC period in SQL, also before 1970. */
export function periodOfRecord(periodMs: number): string {
  return `occurred_at_ms - (((occurred_at_ms % ${periodMs}) + ${periodMs}) % ${periodMs})`;
}

/** The select list of calls and AGGREGATE_SUMS over a group of usage_records, each named as its column. */
export const SUMS_OF_GROUPED_RECORDS = `COUNT(*) AS calls, ${Object.entries(SUMS_OF_RECORDS)
  .map(([column, sum]) => `${sum} AS ${column}`)
  .join(", ")}`;

/** Takes the records with id ≤ ? (the batch retention is about to delete) out of an aggregate table. */
export function subtractExpiring(table: string, periodMs: number): string {
  return `UPDATE ${table} AS period SET calls = period.calls - expiring.calls,
      ${AGGREGATE_SUMS.map((column) => `${column} = period.${column} - expiring.${column}`).join(", ")}
    FROM (SELECT tenant_id, ${periodOfRecord(periodMs)} AS start_ms, provider, model, ${SUMS_OF_GROUPED_RECORDS}
      FROM usage_records WHERE id <= ? GROUP BY 1, 2, 3, 4) AS expiring
    WHERE period.tenant_id = expiring.tenant_id AND period.occurred_at_ms = expiring.start_ms
      AND period.provider = expiring.provider AND period.model = expiring.model`;
}

/** Deletes the rows subtractExpiring left without calls, so the table stays bounded. */
export function dropEmptiedByExpiring(table: string, periodMs: number): string {
  return `DELETE FROM ${table} WHERE calls = 0 AND (tenant_id, occurred_at_ms, provider, model) IN
    (SELECT tenant_id, ${periodOfRecord(periodMs)}, provider, model FROM usage_records WHERE id <= ?)`;
}

/** The first millisecond of the UTC period (day, hour, minute) of `ms`, also before 1970. */
export function floorTo(ms: number, periodMs: number): number {
  return ms - (((ms % periodMs) + periodMs) % periodMs);
}

/**
 * The aggregates of usage_records by UTC period, coarsest first; each period divides the one before.
 * Days outlive the records; hours and minutes sum exactly the retained records (followsRetention).
 */
export const AGGREGATES_BY_PERIOD = [
  { table: "usage_daily", periodMs: DAY_MS, followsRetention: false },
  { table: "usage_hourly", periodMs: HOUR_MS, followsRetention: true },
  { table: "usage_minutely", periodMs: MINUTE_MS, followsRetention: true },
] as const;
