import type { Migration } from "../database/sqlite.ts";

/** Usage ledger tables. One row per distinct model call; (tenant_id, idempotency_key) makes retries count once. */
export const usageMigrations: Migration[] = [
  {
    id: "usage/001-records",
    up: `
      CREATE TABLE usage_records (
        id INTEGER PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        -- canonical JSON of what was recorded, to tell a retry from a different call reusing the key
        request_json TEXT NOT NULL,
        project_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
        output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
        cache_read_input_tokens INTEGER NOT NULL CHECK (cache_read_input_tokens >= 0),
        cache_creation_input_tokens INTEGER NOT NULL CHECK (cache_creation_input_tokens >= 0),
        cache_creation_1h_input_tokens INTEGER NOT NULL
          CHECK (cache_creation_1h_input_tokens BETWEEN 0 AND cache_creation_input_tokens),
        rate_limit_input_tokens INTEGER NOT NULL,
        -- NULL = unknown price; priced at record time so later price changes never rewrite history
        cost_usd REAL,
        uncached_cost_usd REAL,
        unknown_cost_reason TEXT,
        occurred_at_ms INTEGER NOT NULL,
        recorded_at_ms INTEGER NOT NULL,
        UNIQUE (tenant_id, idempotency_key)
      );
      CREATE INDEX usage_records_tenant_time ON usage_records (tenant_id, occurred_at_ms);
      CREATE INDEX usage_records_tenant_session ON usage_records (tenant_id, session_id, occurred_at_ms);
    `,
  },
  {
    id: "usage/002-daily",
    up: `
      -- Live aggregate of usage_records per tenant, UTC day of occurred_at, provider and model, updated
      -- in each record's transaction; retention deletes expired records and keeps these rows, so
      -- summaries of whole days never scan records. occurred_at_ms is the day's first millisecond.
      ${aggregateOfRecords("usage_daily", 86_400_000)}
      -- Summaries narrowed to a run read its records through this index, as sessions do.
      CREATE INDEX usage_records_tenant_run ON usage_records (tenant_id, run_id, occurred_at_ms);
    `,
  },
  {
    id: "usage/003-hourly-minutely",
    up: `
      -- usage_records summed per tenant, UTC hour (usage_hourly) or minute (usage_minutely) of
      -- occurred_at, provider and model: updated in each record's transaction and decreased as
      -- retention deletes records, so they always equal the retained records' sums. A summary's
      -- partial days at the window edges read their whole hours and minutes here instead of up to a
      -- day of records. occurred_at_ms is the period's first millisecond.
      ${aggregateOfRecords("usage_hourly", 3_600_000)}
      ${aggregateOfRecords("usage_minutely", 60_000)}
    `,
  },
];

/**
 * An aggregate table of usage_records by tenant, UTC period (its first millisecond; periods floored
 * also before 1970), provider and model, filled from the records kept so far.
 */
function aggregateOfRecords(table: string, periodMs: number): string {
  return `
      CREATE TABLE ${table} (
        tenant_id TEXT NOT NULL,
        occurred_at_ms INTEGER NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        calls INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cache_read_input_tokens INTEGER NOT NULL,
        cache_creation_input_tokens INTEGER NOT NULL,
        cache_creation_1h_input_tokens INTEGER NOT NULL,
        rate_limit_input_tokens INTEGER NOT NULL,
        -- sums over the calls with a known cost; unknown_cost_calls counts the others
        cost_usd REAL NOT NULL,
        unknown_cost_calls INTEGER NOT NULL,
        uncached_cost_usd REAL NOT NULL,
        PRIMARY KEY (tenant_id, occurred_at_ms, provider, model)
      ) WITHOUT ROWID;
      INSERT INTO ${table}
        SELECT tenant_id, occurred_at_ms - ((occurred_at_ms % ${periodMs}) + ${periodMs}) % ${periodMs},
          provider, model, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_input_tokens),
          SUM(cache_creation_input_tokens), SUM(cache_creation_1h_input_tokens),
          SUM(rate_limit_input_tokens), TOTAL(cost_usd), SUM(cost_usd IS NULL), TOTAL(uncached_cost_usd)
        FROM usage_records GROUP BY 1, 2, 3, 4;`;
}
