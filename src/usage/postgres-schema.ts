import { DAY_MS } from "./aggregates.ts";

const cacheHitRate = `cache_read_input_tokens::double precision
  / NULLIF(input_tokens + cache_read_input_tokens + cache_creation_input_tokens, 0) AS cache_hit_rate`;

const rollupColumns = `provider, model, calls, input_tokens, output_tokens,
  cache_read_input_tokens, cache_creation_input_tokens, cache_creation_1h_input_tokens,
  rate_limit_input_tokens, cost_usd, unknown_cost_calls, uncached_cost_usd, ${cacheHitRate}`;

/**
 * The usage ledger's tables on the shared PostgreSQL (docs/replicas.md "The usage ledger"). The
 * `wayfind_usage_*` tables are wayfind's own and may change between versions; the views
 * `wayfind_usage`, `wayfind_usage_hourly` and `wayfind_usage_daily` are the stable schema for people
 * (cost analysts, dashboards).
 */
export const USAGE_POSTGRES_MIGRATIONS = [
  {
    id: "usage/001-ledger",
    up: `
      CREATE SEQUENCE wayfind_usage_record_ids;
      -- One row per distinct model call, partitioned by the UTC day it was recorded (retention drops
      -- whole days). Times are epoch ms, as in the replicas' SQLite ledger, so both are summed alike.
      CREATE TABLE wayfind_usage_records (
        id bigint NOT NULL DEFAULT nextval('wayfind_usage_record_ids'),
        tenant_id text NOT NULL,
        idempotency_key text NOT NULL,
        -- canonical JSON of what was recorded, to tell a retry from a different call reusing the key
        request_json text NOT NULL,
        project_id text NOT NULL,
        user_id text NOT NULL,
        session_id text NOT NULL,
        run_id text NOT NULL,
        provider text NOT NULL,
        model text NOT NULL,
        input_tokens bigint NOT NULL,
        output_tokens bigint NOT NULL,
        cache_read_input_tokens bigint NOT NULL,
        cache_creation_input_tokens bigint NOT NULL,
        cache_creation_1h_input_tokens bigint NOT NULL,
        rate_limit_input_tokens bigint NOT NULL,
        -- NULL = unknown price; priced at record time so later price changes never rewrite history
        cost_usd double precision,
        uncached_cost_usd double precision,
        unknown_cost_reason text,
        occurred_at_ms bigint NOT NULL,
        recorded_at_ms bigint NOT NULL,
        -- the UTC day of recorded_at_ms: the partition
        recorded_on date NOT NULL,
        PRIMARY KEY (id, recorded_on)
      ) PARTITION BY RANGE (recorded_on);
      -- Each tenant's idempotency keys, one row each, so a key is checked with one index probe however
      -- many days are kept: a writer claims it (INSERT … ON CONFLICT), and a key past retention is
      -- claimed again by the next record that uses it. Retention deletes rows past it (UsagePartitions).
      CREATE TABLE wayfind_usage_keys (
        tenant_id text NOT NULL,
        idempotency_key text NOT NULL,
        record_id bigint NOT NULL,
        recorded_at_ms bigint NOT NULL,
        recorded_on date NOT NULL,
        PRIMARY KEY (tenant_id, idempotency_key)
      );
      CREATE INDEX wayfind_usage_keys_recorded_on ON wayfind_usage_keys (recorded_on);
      CREATE INDEX wayfind_usage_records_tenant_time ON wayfind_usage_records (tenant_id, occurred_at_ms);
      CREATE INDEX wayfind_usage_records_tenant_session
        ON wayfind_usage_records (tenant_id, session_id, occurred_at_ms);
      CREATE INDEX wayfind_usage_records_tenant_run ON wayfind_usage_records (tenant_id, run_id, occurred_at_ms);
      ${rollup("wayfind_usage_rollup_daily", true)}
      ${rollup("wayfind_usage_rollup_hourly", false)}
      ${rollup("wayfind_usage_rollup_minutely", false)}

      CREATE VIEW wayfind_usage AS
        SELECT id, to_timestamp(occurred_at_ms / 1000.0) AS occurred_at,
          to_timestamp(recorded_at_ms / 1000.0) AS recorded_at, tenant_id, project_id, user_id,
          session_id, run_id, provider, model, input_tokens, output_tokens, cache_read_input_tokens,
          cache_creation_input_tokens, cache_creation_1h_input_tokens, rate_limit_input_tokens, cost_usd,
          uncached_cost_usd, unknown_cost_reason, ${cacheHitRate}, idempotency_key
        FROM wayfind_usage_records;
      CREATE VIEW wayfind_usage_hourly AS
        SELECT to_timestamp(occurred_at_ms / 1000.0) AS hour, tenant_id, ${rollupColumns}
        FROM wayfind_usage_rollup_hourly;
      CREATE VIEW wayfind_usage_daily AS
        SELECT (to_timestamp(occurred_at_ms / 1000.0) AT TIME ZONE 'UTC')::date AS day, tenant_id, project_id,
          user_id, ${rollupColumns}
        FROM wayfind_usage_rollup_daily;
    `,
  },
] as const;

/**
 * A rollup of the records per UTC period (its first ms), tenant, provider and model — and for days,
 * project and user, what cost is charged back by — updated in each record's transaction. Rollups are
 * never decreased: days and hours keep counting records after retention dropped them (minutes are
 * dropped with them, see maintainPartitions).
 */
function rollup(table: string, byWho: boolean): string {
  const who = byWho ? "project_id text NOT NULL,\n        user_id text NOT NULL," : "";
  return `
      CREATE TABLE ${table} (
        tenant_id text NOT NULL,
        occurred_at_ms bigint NOT NULL,
        ${who}
        provider text NOT NULL,
        model text NOT NULL,
        calls bigint NOT NULL,
        input_tokens bigint NOT NULL,
        output_tokens bigint NOT NULL,
        cache_read_input_tokens bigint NOT NULL,
        cache_creation_input_tokens bigint NOT NULL,
        cache_creation_1h_input_tokens bigint NOT NULL,
        rate_limit_input_tokens bigint NOT NULL,
        -- sums over the calls with a known cost; unknown_cost_calls counts the others
        cost_usd double precision NOT NULL,
        unknown_cost_calls bigint NOT NULL,
        uncached_cost_usd double precision NOT NULL,
        PRIMARY KEY (${rollupKey(byWho).join(", ")})
      );
      -- Dashboards read every tenant's periods by time.
      CREATE INDEX ${table}_time ON ${table} (occurred_at_ms);`;
}

/** A rollup's key columns, in the order of its primary key. */
export function rollupKey(byWho: boolean): string[] {
  return ["tenant_id", "occurred_at_ms", "provider", "model", ...(byWho ? ["project_id", "user_id"] : [])];
}

/**
 * A record's columns as a writer sends them (one array each: the ledger's batches, a data folder's
 * import), with their PostgreSQL types.
 */
export const RECORD_COLUMNS = [
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
  // NULL = when recorded
  ["occurred_at_ms", "bigint"],
] as const;

/** What a rollup sums of the records inserted, by column. */
export const ROLLUP_SUMS: Readonly<Record<string, string>> = {
  calls: "count(*)",
  input_tokens: "sum(input_tokens)",
  output_tokens: "sum(output_tokens)",
  cache_read_input_tokens: "sum(cache_read_input_tokens)",
  cache_creation_input_tokens: "sum(cache_creation_input_tokens)",
  cache_creation_1h_input_tokens: "sum(cache_creation_1h_input_tokens)",
  rate_limit_input_tokens: "sum(rate_limit_input_tokens)",
  cost_usd: "coalesce(sum(cost_usd), 0)",
  unknown_cost_calls: "count(*) FILTER (WHERE cost_usd IS NULL)",
  uncached_cost_usd: "coalesce(sum(uncached_cost_usd), 0)",
};

/** The rollup tables by period, in the order of AGGREGATES_BY_PERIOD (day, hour, minute). */
export const ROLLUP_TABLES = {
  usage_daily: "wayfind_usage_rollup_daily",
  usage_hourly: "wayfind_usage_rollup_hourly",
  usage_minutely: "wayfind_usage_rollup_minutely",
} as const;

/** Whether a rollup is kept by project and user as well (days only: hours and minutes stay small). */
export const ROLLUP_BY_WHO = { usage_daily: true, usage_hourly: false, usage_minutely: false } as const;

/** The partition of wayfind_usage_records holding the records of the UTC day starting at `dayStartMs`. */
function partitionName(dayStartMs: number): string {
  return `wayfind_usage_records_${utcDate(dayStartMs).replaceAll("-", "")}`;
}

/** The day start (epoch ms) of a partition named by partitionName, or undefined for another name. */
export function partitionDay(name: string): number | undefined {
  const match = /^wayfind_usage_records_(\d{4})(\d{2})(\d{2})$/.exec(name);
  if (!match) return undefined;
  const ms = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  return Number.isFinite(ms) ? ms : undefined;
}

/** The UTC date (YYYY-MM-DD) of epoch ms `ms`: a record's recorded_on. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function createPartition(dayStartMs: number): string {
  return `CREATE TABLE IF NOT EXISTS ${partitionName(dayStartMs)} PARTITION OF wayfind_usage_records
    FOR VALUES FROM ('${utcDate(dayStartMs)}') TO ('${utcDate(dayStartMs + DAY_MS)}')`;
}
