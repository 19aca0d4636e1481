import type { Caller } from "../caller/caller.ts";
import { invalidArgument, quoteInput, WayfindError } from "../errors.ts";
import { AGGREGATE_SUMS, AGGREGATES_BY_PERIOD, floorTo } from "./aggregates.ts";
import { PROVIDERS, type Provider } from "./model.ts";

/**
 * Usage summaries: the query (filter, grouping, totals), its validation, and the plan of which
 * aggregate rows and which records answer a window (summaryPlan). The ledger runs the plan.
 */

export const USAGE_GROUP_BY = ["session", "run", "provider", "model", "day"] as const;
export type UsageGroupBy = (typeof USAGE_GROUP_BY)[number];

export interface UsageSummaryFilter {
  /** Must equal the caller's tenant when given: a caller reads only its own tenant's usage. */
  readonly tenantId?: string;
  readonly sessionId?: string;
  readonly runId?: string;
  readonly provider?: Provider;
  /** Exact model id as recorded. */
  readonly model?: string;
  /** Inclusive lower bound on occurredAt. */
  readonly since?: Date;
  /** Exclusive upper bound on occurredAt. */
  readonly until?: Date;
  readonly groupBy?: readonly UsageGroupBy[];
}

export interface UsageTotals {
  readonly calls: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadInputTokens: number;
  readonly cacheCreationInputTokens: number;
  readonly cacheCreation1hInputTokens: number;
  /** Input that counts against input-tokens-per-minute limits (Anthropic excludes cache reads). */
  readonly rateLimitInputTokens: number;
  /** Sum over calls with a known cost; see unknownCostCalls. */
  readonly totalCostUsd: number;
  readonly unknownCostCalls: number;
  /** What the known-cost calls would have cost with no caching. */
  readonly uncachedCostUsd: number;
  /** uncachedCostUsd − totalCostUsd; negative when cache writes were never read back. */
  readonly savingsUsd: number;
  /** cacheRead ÷ (input + cacheRead + cacheCreation); null when no input at all. */
  readonly cacheHitRate: number | null;
}

interface UsageGroup {
  /** One entry per groupBy dimension; `day` is the UTC date `YYYY-MM-DD`. */
  readonly key: Readonly<Partial<Record<UsageGroupBy, string>>>;
  readonly totals: UsageTotals;
}

export interface UsageSummary {
  readonly totals: UsageTotals;
  /** Empty without groupBy; otherwise ordered by the group key. */
  readonly groups: readonly UsageGroup[];
}

export interface TotalsRow {
  calls: number;
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_input_tokens: number | null;
  cache_creation_input_tokens: number | null;
  cache_creation_1h_input_tokens: number | null;
  rate_limit_input_tokens: number | null;
  cost_usd: number | null;
  unknown_cost_calls: number | null;
  uncached_cost_usd: number | null;
  [group: string]: string | number | null;
}

/** How summary SQL is spelled on one database: the replicas' SQLite, or the shared PostgreSQL. */
export interface SummaryDialect {
  /** The table of usage records. */
  readonly records: string;
  /** The aggregate tables, by their name in AGGREGATES_BY_PERIOD. */
  readonly aggregates: Readonly<Record<(typeof AGGREGATES_BY_PERIOD)[number]["table"], string>>;
  /** The UTC date `YYYY-MM-DD` of occurred_at_ms. */
  readonly day: string;
  /** 1 for a record of unknown cost, else 0. */
  readonly unknownCost: string;
  /** A column's sum, read back as a number. */
  sum(column: string): string;
  /**
   * More conditions on records read over `window` that the database can narrow its reads by (days
   * of a partitioned table); they must keep every record of the window.
   */
  recordsIn?(window: TimeWindow): { clauses: string; params: unknown[] };
}

export const SQLITE_SUMMARIES: SummaryDialect = {
  records: "usage_records",
  aggregates: { usage_daily: "usage_daily", usage_hourly: "usage_hourly", usage_minutely: "usage_minutely" },
  // 1000.0: integer division would move a pre-1970 millisecond to the next day.
  day: "strftime('%Y-%m-%d', occurred_at_ms / 1000.0, 'unixepoch')",
  unknownCost: "cost_usd IS NULL",
  sum: (column) => `SUM(${column})`,
};

/** The expression a summary groups by for `group`. */
function groupColumn(dialect: SummaryDialect, group: UsageGroupBy): string {
  const columns: Record<UsageGroupBy, string> = {
    session: "session_id",
    run: "run_id",
    provider: "provider",
    model: "model",
    day: dialect.day,
  };
  return columns[group];
}

/** Columns a summary filters, groups or sums, named alike in the records and the aggregates. */
const SUMMED_COLUMNS = `provider, model, occurred_at_ms, input_tokens, output_tokens,
  cache_read_input_tokens, cache_creation_input_tokens, cache_creation_1h_input_tokens,
  rate_limit_input_tokens, cost_usd, uncached_cost_usd`;

/** The select list of a summary's totals (TotalsRow). */
function aggregatesOf(dialect: SummaryDialect): string {
  return ["calls", ...AGGREGATE_SUMS].map((column) => `${dialect.sum(column)} AS ${column}`).join(", ");
}

/** What a summary is narrowed to, validated; times in epoch ms. */
interface Narrowing {
  readonly tenantId: string;
  readonly sessionId?: string;
  readonly runId?: string;
  readonly provider?: Provider;
  readonly model?: string;
  readonly since?: number;
  readonly until?: number;
}

/** One table read over one part of the window: SQL yielding SUMMED_COLUMNS, calls, unknown_cost_calls. */
interface SummarySource {
  readonly sql: string;
  readonly params: unknown[];
}

/** [since, until) in epoch ms; undefined = unbounded on that side. */
interface TimeWindow {
  readonly since: number | undefined;
  readonly until: number | undefined;
}

/**
 * Where a summary's rows come from, and the windows it reads records in (checkRecordsToScan bounds
 * them). Narrowed to or grouped by a session or run: the records in the window. Otherwise the whole
 * UTC days inside [since, until) come from usage_daily, the whole hours of the partial days at the
 * edges from usage_hourly, the whole minutes of the partial hours from usage_minutely, and only the
 * partial minutes at the edges from records: per edge, provider and model at most 23 hourly and 59
 * per-minute rows and a minute of records; minute-aligned windows read no records. The hourly and
 * per-minute rows sum the retained records, so a partial day counts its retained records exactly as
 * a scan would; whole days count pruned ones too, from usage_daily.
 */
function summaryPlan(
  narrowing: Narrowing,
  needsRecords: boolean,
  dialect: SummaryDialect,
): { sources: SummarySource[]; recordWindows: TimeWindow[] } {
  const sources: SummarySource[] = [];
  const recordWindows: TimeWindow[] = [];
  const readRecords = (window: TimeWindow) => {
    const { clauses, params } = recordsWhere(narrowing, window, false, dialect);
    const detail = needsRecords ? "session_id, run_id, " : "";
    sources.push({
      sql: `SELECT ${detail}${SUMMED_COLUMNS}, 1 AS calls, ${dialect.unknownCost} AS unknown_cost_calls
        FROM ${dialect.records} WHERE ${clauses}`,
      params,
    });
    recordWindows.push(window);
  };
  /** Whole periods of the aggregate at `level` from it, the partial ones at the edges one level down. */
  const split = (window: TimeWindow, level: number): void => {
    const aggregate = AGGREGATES_BY_PERIOD[level];
    if (aggregate === undefined) {
      readRecords(window);
      return;
    }
    const { since, until } = window;
    const { periodMs } = aggregate;
    const firstWhole = since === undefined ? undefined : floorTo(since + periodMs - 1, periodMs);
    const endOfWhole = until === undefined ? undefined : floorTo(until, periodMs);
    if (firstWhole !== undefined && endOfWhole !== undefined && firstWhole >= endOfWhole) {
      split(window, level + 1);
      return;
    }
    const { clauses, params } = whereOf(narrowing, {
      since: firstWhole,
      until: endOfWhole,
      indexedOnly: false,
    });
    sources.push({
      sql: `SELECT ${SUMMED_COLUMNS}, calls, unknown_cost_calls FROM ${dialect.aggregates[aggregate.table]}
        WHERE ${clauses}`,
      params,
    });
    if (since !== undefined && firstWhole !== undefined && since < firstWhole) {
      split({ since, until: firstWhole }, level + 1);
    }
    if (until !== undefined && endOfWhole !== undefined && endOfWhole < until) {
      split({ since: endOfWhole, until }, level + 1);
    }
  };
  const window = { since: narrowing.since, until: narrowing.until };
  if (needsRecords) readRecords(window);
  else split(window, 0);
  return { sources, recordWindows };
}

/** The WHERE of records read over `window`, with the dialect's narrowing. */
function recordsWhere(
  narrowing: Narrowing,
  window: TimeWindow,
  indexedOnly: boolean,
  dialect: SummaryDialect,
): { clauses: string; params: unknown[] } {
  const where = whereOf(narrowing, { ...window, indexedOnly });
  const more = dialect.recordsIn?.(window);
  return more
    ? { clauses: `${where.clauses} AND ${more.clauses}`, params: [...where.params, ...more.params] }
    : where;
}

/**
 * The WHERE of one source over [since, until). indexedOnly keeps the columns an index of
 * usage_records covers (tenant, session or run, time), for counting on the index alone.
 */
function whereOf(
  narrowing: Narrowing,
  window: { since: number | undefined; until: number | undefined; indexedOnly: boolean },
): { clauses: string; params: unknown[] } {
  const clauses = ["tenant_id = ?"];
  const params: unknown[] = [narrowing.tenantId];
  const add = (clause: string, value: unknown) => {
    if (value === undefined) return;
    clauses.push(clause);
    params.push(value);
  };
  add("session_id = ?", narrowing.sessionId);
  // A session narrows further than a run in practice; one index per count keeps it index-only.
  if (!(window.indexedOnly && narrowing.sessionId !== undefined)) add("run_id = ?", narrowing.runId);
  if (!window.indexedOnly) {
    add("provider = ?", narrowing.provider);
    add("model = ?", narrowing.model);
  }
  add("occurred_at_ms >= ?", window.since);
  add("occurred_at_ms < ?", window.until);
  return { clauses: clauses.join(" AND "), params };
}

function toTotals(row: TotalsRow | undefined): UsageTotals {
  const n = (v: number | string | null | undefined) => (typeof v === "number" ? v : 0);
  const input = n(row?.input_tokens);
  const read = n(row?.cache_read_input_tokens);
  const write = n(row?.cache_creation_input_tokens);
  const cost = n(row?.cost_usd);
  const uncached = n(row?.uncached_cost_usd);
  const prompt = input + read + write;
  return {
    calls: n(row?.calls),
    inputTokens: input,
    outputTokens: n(row?.output_tokens),
    cacheReadInputTokens: read,
    cacheCreationInputTokens: write,
    cacheCreation1hInputTokens: n(row?.cache_creation_1h_input_tokens),
    rateLimitInputTokens: n(row?.rate_limit_input_tokens),
    totalCostUsd: cost,
    unknownCostCalls: n(row?.unknown_cost_calls),
    uncachedCostUsd: uncached,
    savingsUsd: uncached - cost,
    cacheHitRate: prompt === 0 ? null : read / prompt,
  };
}

function validateFilter(caller: Caller, filter: UsageSummaryFilter): Narrowing {
  if (filter.tenantId !== undefined && filter.tenantId !== caller.tenantId) {
    throw new WayfindError(
      "permission_denied",
      "a caller can read only its own tenant's usage; omit tenant_id",
    );
  }
  if (filter.provider !== undefined && !PROVIDERS.includes(filter.provider)) {
    throw invalidArgument(
      `provider "${String(filter.provider)}" is unknown; use one of ${PROVIDERS.join(", ")}`,
    );
  }
  const since = timeBound("since", filter.since);
  const until = timeBound("until", filter.until);
  if (since !== undefined && until !== undefined && since >= until) {
    throw invalidArgument("since must be before until (the window is [since, until))");
  }
  return {
    tenantId: caller.tenantId,
    sessionId: filter.sessionId,
    runId: filter.runId,
    provider: filter.provider,
    model: filter.model,
    since,
    until,
  };
}

function timeBound(name: string, value: Date | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : Number.NaN;
  if (!Number.isFinite(ms)) throw invalidArgument(`${name} must be a valid timestamp`);
  return ms;
}

function validateGroupBy(groupBy: readonly UsageGroupBy[]): UsageGroupBy[] {
  const out: UsageGroupBy[] = [];
  for (const g of groupBy) {
    if (!USAGE_GROUP_BY.includes(g)) {
      throw invalidArgument(
        `group_by ${quoteInput(String(g))} is unknown; use any of ${USAGE_GROUP_BY.join(", ")}`,
      );
    }
    if (!out.includes(g)) out.push(g);
  }
  return out;
}

/** One SQL statement with its `?` parameters. */
interface SqlQuery {
  readonly sql: string;
  readonly params: unknown[];
}

/** The statements that answer one summary, on either database (see summaryQueries). */
export interface SummaryQueries {
  /**
   * Counts of the records the summary reads, one per window, each on an index alone: run in order,
   * each with one more parameter, how many records may still be counted (recordsToCount), and pass
   * the total to checkRecordsScanned before running the rest.
   */
  readonly recordCounts: readonly SqlQuery[];
  readonly needsRecords: boolean;
  /** One row: the totals. */
  readonly totals: SqlQuery;
  /** One row per group (g0 its key), ordered; undefined without groupBy. */
  readonly groups: SqlQuery | undefined;
  readonly groupBy: readonly UsageGroupBy[];
}

/**
 * The statements of a summary of the caller's tenant narrowed by `filter`. Whole UTC days come from
 * the daily aggregate, whole hours and minutes from the hourly and per-minute ones, so the cost does
 * not grow with the window; see summaryPlan for what reads records.
 */
export function summaryQueries(
  caller: Caller,
  filter: UsageSummaryFilter,
  dialect: SummaryDialect,
): SummaryQueries {
  const narrowing = validateFilter(caller, filter);
  const groupBy = validateGroupBy(filter.groupBy ?? []);
  const needsRecords =
    filter.sessionId !== undefined ||
    filter.runId !== undefined ||
    groupBy.includes("session") ||
    groupBy.includes("run");
  const { sources, recordWindows } = summaryPlan(narrowing, needsRecords, dialect);
  const recordCounts = recordWindows.map((window) => {
    const { clauses, params } = recordsWhere(narrowing, window, true, dialect);
    return {
      sql: `SELECT COUNT(*) AS calls FROM (SELECT 1 FROM ${dialect.records} WHERE ${clauses} LIMIT ?) AS counted`,
      params,
    };
  });
  const source = `(${sources.map((part) => part.sql).join(" UNION ALL ")}) AS source`;
  const params = sources.flatMap((part) => part.params);
  const aggregates = aggregatesOf(dialect);
  const totals = { sql: `SELECT ${aggregates} FROM ${source}`, params };
  if (groupBy.length === 0) return { recordCounts, needsRecords, totals, groups: undefined, groupBy };
  const cols = groupBy.map((g, i) => `${groupColumn(dialect, g)} AS g${i}`).join(", ");
  const order = groupBy.map((_, i) => `g${i}`).join(", ");
  const groups = {
    sql: `SELECT ${cols}, ${aggregates} FROM ${source} GROUP BY ${order} ORDER BY ${order}`,
    params,
  };
  return { recordCounts, needsRecords, totals, groups, groupBy };
}

/** The last parameter of a record count, after `counted` records were counted by the ones before. */
export function recordsToCount(counted: number): number {
  return MAX_RECORDS_SCANNED + 1 - counted;
}

/**
 * A summary reads at most MAX_RECORDS_SCANNED records. Sessions and runs are only in the records, so
 * a summary that needs them reads the whole window's; any other reads only the partial minutes at its
 * window's edges.
 */
export function checkRecordsScanned(scanned: number, needsRecords: boolean): void {
  if (scanned <= MAX_RECORDS_SCANNED) return;
  const bound = MAX_RECORDS_SCANNED.toLocaleString("en-US");
  throw invalidArgument(
    needsRecords
      ? `a summary narrowed to or grouped by a session or run reads at most ${bound} ` +
          "usage records, and this one matches more; narrow the window (start_time, end_time) or the " +
          "session or run, or group by provider, model or day, which have no such bound"
      : `a summary reads at most ${bound} usage records in the partial minutes at the edges of its ` +
          "window, and this one's start_time or end_time falls in a minute with more; set start_time " +
          "and end_time on whole minutes, which are summed from per-minute aggregates however busy",
  );
}

/** The summary from the rows its totals and groups statements returned. */
export function summaryOf(
  queries: SummaryQueries,
  totalsRow: TotalsRow | undefined,
  groupRows: readonly TotalsRow[],
): UsageSummary {
  const { groupBy } = queries;
  const groups = groupRows.map(
    (row): UsageGroup => ({
      key: Object.fromEntries(groupBy.map((g, i) => [g, String(row[`g${i}`])])),
      totals: toTotals(row),
    }),
  );
  return { totals: toTotals(totalsRow), groups };
}

/**
 * Records one summary by session or run may scan: bounded so that the scan, on the event loop, stays
 * within what one call may hold it for.
 */
export const MAX_RECORDS_SCANNED = 20_000;
