import type { Statement } from "better-sqlite3";
import type { Caller } from "../caller/caller.ts";
import { distinctLeadingValues } from "../database/distinct.ts";
import type { Db } from "../database/sqlite.ts";
import { writeTransaction } from "../database/transaction.ts";
import { type FieldViolation, invalidArgument, WayfindError } from "../errors.ts";
import type { EventSink, NewEvent } from "../events/event.ts";
import { LIMITS } from "../limits.ts";
import type { ReplicatedWrite, StateWriter } from "../replication/writes.ts";
import { inSpan } from "../telemetry.ts";
import {
  AGGREGATES_BY_PERIOD,
  addToAggregate,
  DAY_MS,
  dropEmptiedByExpiring,
  floorTo,
  subtractExpiring,
} from "./aggregates.ts";
import {
  MAX_TOKENS_PER_FIELD,
  PROVIDERS,
  type Provider,
  rateLimitInputTokens,
  type TokenUsage,
} from "./model.ts";
import { PricingTable } from "./pricing.ts";
import {
  checkRecordsScanned,
  recordsToCount,
  SQLITE_SUMMARIES,
  summaryOf,
  summaryQueries,
  type TotalsRow,
  type UsageSummary,
  type UsageSummaryFilter,
} from "./summary.ts";

export interface RecordUsageInput {
  readonly provider: Provider;
  readonly model: string;
  readonly usage: TokenUsage;
  /** Unique per model call (e.g. the provider's response id); a retry reuses it. Scoped to the tenant. */
  readonly idempotencyKey: string;
  /** When the model call happened; default now. At most 24 h in the future (clock skew). */
  readonly occurredAt?: Date;
}

export interface RecordUsageResult {
  readonly recordId: number;
  /** USD at the prices in effect when first recorded; null = unknown price (see unknownCostReason). */
  readonly costUsd: number | null;
  readonly uncachedCostUsd: number | null;
  readonly unknownCostReason?: string;
  /** True when this key was already recorded with the same values: nothing new was counted. */
  readonly duplicate: boolean;
  readonly occurredAt: Date;
}

/** A model call ready to store: validated, priced, canonical (the payload of a `usage/record` change). */
export type UsageRecordChange = {
  readonly tenantId: string;
  readonly projectId: string;
  readonly userId: string;
  readonly sessionId: string;
  readonly runId: string;
  readonly provider: Provider;
  readonly model: string;
  readonly idempotencyKey: string;
  /** The canonical request a retry must repeat (see canonicalRequest). */
  readonly request: string;
  readonly occurredAtMs: number | null;
  /** input, output, cache read, cache write, 1-hour cache write, rate-limited input. */
  readonly tokenCounts: readonly [number, number, number, number, number, number];
  readonly costUsd: number | null;
  readonly uncachedCostUsd: number | null;
  readonly unknownCostReason: string | null;
};

export interface UsageLedgerOptions {
  /** Opened with usageMigrations applied. */
  readonly db: Db;
  readonly events: EventSink;
  readonly pricing?: PricingTable;
  /** Clock in epoch ms; injectable for tests. */
  readonly now?: () => number;
  /**
   * The time retention counts from (default `now`). A replica passes the commit time of the last
   * change it applied: a record is then forgotten at the same point of the log on every replica, so a
   * key retried near the end of its retention is new, or a duplicate, on all of them alike.
   */
  readonly retentionClock?: () => number;
  /**
   * Keep each record this many days after it was recorded, then delete it (pruneExpired); its day's
   * row in usage_daily keeps counting it. Undefined = keep every record.
   */
  readonly retentionDays?: number;
}

const MAX_FUTURE_MS = 24 * 60 * 60 * 1000;
// biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

const USAGE_FIELDS = [
  ["inputTokens", "input_tokens"],
  ["outputTokens", "output_tokens"],
  ["cacheReadInputTokens", "cache_read_input_tokens"],
  ["cacheCreationInputTokens", "cache_creation_input_tokens"],
  ["cacheCreation1hInputTokens", "cache_creation_1h_input_tokens"],
] as const;

/** What a stored record tells a retry of its key (duplicateResult). */
export interface RecordRow {
  id: number;
  recorded_at_ms: number;
  request_json: string;
  cost_usd: number | null;
  uncached_cost_usd: number | null;
  unknown_cost_reason: string | null;
  occurred_at_ms: number;
}

/**
 * What the usage service records and summarises through: the SQLite ledger (localUsageBook), or the
 * ledger on the shared PostgreSQL when replicas share one (PostgresLedger).
 */
export interface UsageBook {
  record(caller: Caller, input: RecordUsageInput): Promise<RecordUsageResult>;
  summary(caller: Caller, filter: UsageSummaryFilter): Promise<UsageSummary>;
  /** Tenants that recorded usage, in order, after `after` (at most `limit`; for the operator). */
  tenants(after: string, limit: number): Promise<string[]>;
}

/** The SQLite ledger, written through `writer` (one server's file, or the replicas' change log of an older fleet). */
export function localUsageBook(ledger: UsageLedger, writer: StateWriter): UsageBook {
  return {
    record: (caller, input) =>
      writer.write(ledger.recordWrite, ledger.prepareRecord(caller, input), caller.tenantId),
    summary: async (caller, filter) => ledger.getUsageSummary(caller, filter),
    tenants: async (after, limit) => ledger.tenantIds(after, limit),
  };
}

/**
 * Usage accounting: records model calls exactly once per idempotency key and summarises tokens, cost and
 * cache effectiveness. All reads and writes are scoped to the caller's tenant.
 */
export class UsageLedger {
  private readonly db: Db;
  private readonly events: EventSink;
  private readonly pricing: PricingTable;
  private readonly now: () => number;
  private readonly retentionClock: () => number;
  private readonly statements = new Map<string, Statement<unknown[], TotalsRow>>();
  private readonly selectByKey: Statement<[string, string], RecordRow>;
  private readonly insertRecord: Statement;
  /** Per aggregate table: adds a record to its period's row. */
  private readonly addToAggregates: readonly { periodMs: number; add: Statement }[];
  /** Per aggregate table that follows retention: takes the expiring batch out, drops emptied rows. */
  private readonly removeExpiredFromAggregates: readonly Statement<[number]>[];
  private readonly retentionMs: number | undefined;
  private readonly oldestRecords: Statement<[number], { id: number; recorded_at_ms: number }>;
  private readonly deleteThrough: Statement<[number]>;

  constructor(options: UsageLedgerOptions) {
    this.db = options.db;
    this.events = options.events;
    this.pricing = options.pricing ?? PricingTable.withDefaults();
    this.now = options.now ?? Date.now;
    this.retentionClock = options.retentionClock ?? this.now;
    this.retentionMs = options.retentionDays === undefined ? undefined : options.retentionDays * DAY_MS;
    this.oldestRecords = this.db.prepare("SELECT id, recorded_at_ms FROM usage_records ORDER BY id LIMIT ?");
    this.addToAggregates = AGGREGATES_BY_PERIOD.map(({ table, periodMs }) => ({
      periodMs,
      add: this.db.prepare(addToAggregate(table)),
    }));
    this.removeExpiredFromAggregates = AGGREGATES_BY_PERIOD.filter((a) => a.followsRetention).flatMap(
      ({ table, periodMs }) => [
        this.db.prepare<[number]>(subtractExpiring(table, periodMs)),
        this.db.prepare<[number]>(dropEmptiedByExpiring(table, periodMs)),
      ],
    );
    this.deleteThrough = this.db.prepare("DELETE FROM usage_records WHERE id <= ?");
    this.selectByKey = this.db.prepare<[string, string], RecordRow>(
      `SELECT id, recorded_at_ms, request_json, cost_usd, uncached_cost_usd, unknown_cost_reason, occurred_at_ms
       FROM usage_records WHERE tenant_id = ? AND idempotency_key = ?`,
    );
    this.insertRecord = this.db.prepare(
      `INSERT INTO usage_records (tenant_id, idempotency_key, request_json, project_id, user_id, session_id,
         run_id, provider, model, input_tokens, output_tokens, cache_read_input_tokens,
         cache_creation_input_tokens, cache_creation_1h_input_tokens, rate_limit_input_tokens, cost_usd,
         uncached_cost_usd, unknown_cost_reason, occurred_at_ms, recorded_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** Tenants that recorded usage, in order, after `after` (at most `limit`). */
  tenantIds(after: string, limit: number): string[] {
    // Days are kept from the first record on (never pruned): every tenant that recorded has one.
    return distinctLeadingValues(this.db, "usage_daily", "tenant_id", after, limit);
  }

  /**
   * Records one model call. Committed before it returns. A retry with the same key and values returns
   * the original result (`duplicate: true`) and counts nothing; the same key with different values is
   * `already_exists`. A key is remembered as long as its record is kept (`retentionDays` after
   * recording); a retry later than that counts again. Emits `usage_recorded` once per new record, in
   * the record's transaction. (The server writes through `prepareRecord` and `recordWrite`, which
   * several replicas apply alike; this is the same on one SQLite file.)
   */
  recordUsage(caller: Caller, input: RecordUsageInput): RecordUsageResult {
    const atMs = this.now();
    const record = this.prepareRecord(caller, input, atMs);
    return writeTransaction(this.db, () => this.recordWrite.apply(record, { atMs }));
  }

  /** See prepareUsageRecord. */
  prepareRecord(caller: Caller, input: RecordUsageInput, nowMs = this.now()): UsageRecordChange {
    return prepareUsageRecord(caller, input, this.pricing, nowMs);
  }

  /** Stores a prepared record, unless its key is already recorded (see recordUsage). */
  readonly recordWrite: ReplicatedWrite<UsageRecordChange, RecordUsageResult> = {
    kind: "usage/record",
    apply: (record, { atMs }) =>
      inSpan("wayfind.record_usage", { "wayfind.usage.provider": record.provider }, () =>
        this.store(record, atMs),
      ),
  };

  private store(record: UsageRecordChange, recordedAtMs: number): RecordUsageResult {
    const existing = this.selectByKey.get(record.tenantId, record.idempotencyKey);
    if (existing && !this.expiredAt(existing.recorded_at_ms, recordedAtMs))
      return duplicateResult(existing, record.request);
    // Past retention at this write's time: forgotten, as pruning would have done by now (on a replica
    // whose pruning has not come to it yet, the outcome must be the same as on one whose has).
    if (existing) this.expireThrough(existing.id);
    const occurredAtMs = record.occurredAtMs ?? recordedAtMs;
    const { costUsd, uncachedCostUsd, unknownCostReason, tokenCounts } = record;
    const info = this.insertRecord.run(
      record.tenantId,
      record.idempotencyKey,
      record.request,
      record.projectId,
      record.userId,
      record.sessionId,
      record.runId,
      record.provider,
      record.model,
      ...tokenCounts,
      costUsd,
      uncachedCostUsd,
      unknownCostReason,
      occurredAtMs,
      recordedAtMs,
    );
    const recordId = Number(info.lastInsertRowid);
    const sums = [
      record.provider,
      record.model,
      ...tokenCounts,
      costUsd ?? 0,
      costUsd === null ? 1 : 0,
      uncachedCostUsd ?? 0,
    ];
    for (const { periodMs, add } of this.addToAggregates) {
      add.run(record.tenantId, floorTo(occurredAtMs, periodMs), ...sums);
    }
    // In the record's transaction: a crash keeps both or neither.
    this.events.emit(usageRecordedEvent(record, recordId));
    return {
      recordId,
      costUsd,
      uncachedCostUsd,
      ...(unknownCostReason ? { unknownCostReason } : {}),
      duplicate: false,
      occurredAt: new Date(occurredAtMs),
    };
  }

  /** Totals (and optional groups) over the caller's tenant, narrowed by the filter (see summaryQueries). */
  getUsageSummary(caller: Caller, filter: UsageSummaryFilter = {}): UsageSummary {
    const queries = summaryQueries(caller, filter, SQLITE_SUMMARIES);
    let scanned = 0;
    for (const count of queries.recordCounts) {
      scanned += this.statement(count.sql).get([...count.params, recordsToCount(scanned)])?.calls ?? 0;
    }
    checkRecordsScanned(scanned, queries.needsRecords);
    const totals = this.statement(queries.totals.sql).get(queries.totals.params);
    const groups = queries.groups ? this.statement(queries.groups.sql).all(queries.groups.params) : [];
    return summaryOf(queries, totals, groups);
  }

  /**
   * Retention: deletes the oldest records, recorded more than `retentionDays` ago, at most `batchSize`
   * in one short transaction. Returns how many it deleted and whether more may be waiting. Their days
   * keep counting them in usage_daily; their hours and minutes (usage_hourly, usage_minutely) stop
   * counting them in the same transaction (a row left without calls is deleted). Sessions and runs
   * live only as long as the records.
   */
  pruneExpired(batchSize = PRUNE_BATCH_SIZE): { deleted: number; more: boolean } {
    if (this.retentionMs === undefined) return { deleted: 0, more: false };
    const nowMs = this.retentionClock();
    return writeTransaction(this.db, () => {
      // Ids grow with recorded_at_ms (one writer, stamped at insert), so the expired records are the
      // oldest ids: read the head in id order instead of indexing recorded_at_ms for every insert.
      let deleted = 0;
      let lastExpiredId: number | undefined;
      for (const row of this.oldestRecords.all(batchSize)) {
        if (!this.expiredAt(row.recorded_at_ms, nowMs)) break;
        lastExpiredId = row.id;
        deleted++;
      }
      if (lastExpiredId === undefined) return { deleted: 0, more: false };
      this.expireThrough(lastExpiredId);
      return { deleted, more: deleted === batchSize };
    });
  }

  /** Whether a record recorded at `recordedAtMs` is past retention at `nowMs`. */
  private expiredAt(recordedAtMs: number, nowMs: number): boolean {
    return this.retentionMs !== undefined && recordedAtMs < nowMs - this.retentionMs;
  }

  /**
   * Deletes the records through `id` — expired ones: ids grow with recorded_at_ms, so every record
   * before an expired one is expired too — taking them out of the aggregates that follow retention.
   */
  private expireThrough(id: number): void {
    for (const statement of this.removeExpiredFromAggregates) statement.run(id);
    this.deleteThrough.run(id);
  }

  /** Summary queries come in a few dozen shapes; preparing each once saves parsing and planning per call. */
  private statement(sql: string): Statement<unknown[], TotalsRow> {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare<unknown[], TotalsRow>(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

/** Records per retention transaction: a few ms each, so pruning never holds the write lock for long. */
const PRUNE_BATCH_SIZE = 200;

/**
 * Validates a model call and computes its cost: everything recording it needs, as plain JSON, so
 * every replica records it alike (prices may differ between replicas' configs; the cost is fixed here).
 */
export function prepareUsageRecord(
  caller: Caller,
  input: RecordUsageInput,
  pricing: PricingTable,
  nowMs: number,
): UsageRecordChange {
  const usage = validateRecordInput(input, nowMs);
  const cost = pricing.cost(input.provider, input.model, usage);
  return {
    tenantId: caller.tenantId,
    projectId: caller.projectId,
    userId: caller.userId,
    sessionId: caller.sessionId,
    runId: caller.runId,
    provider: input.provider,
    model: input.model,
    idempotencyKey: input.idempotencyKey,
    request: canonicalRequest(caller, input, usage),
    occurredAtMs: input.occurredAt ? input.occurredAt.getTime() : null,
    // The token columns, in the same order in usage_records and the aggregates.
    tokenCounts: [
      usage.inputTokens,
      usage.outputTokens,
      usage.cacheReadInputTokens,
      usage.cacheCreationInputTokens,
      usage.cacheCreation1hInputTokens ?? 0,
      rateLimitInputTokens(input.provider, usage),
    ],
    costUsd: cost.costUsd,
    uncachedCostUsd: cost.uncachedCostUsd,
    unknownCostReason: cost.unknownReason ?? null,
  };
}

function validateRecordInput(input: RecordUsageInput, nowMs: number): TokenUsage {
  const problems: FieldViolation[] = [];
  const problem = (field: string, description: string) => problems.push({ field, description });
  if (!PROVIDERS.includes(input.provider)) {
    problem("provider", `"${String(input.provider)}" is unknown; use one of ${PROVIDERS.join(", ")}`);
  }
  if (typeof input.model !== "string" || input.model.trim() === "") {
    problem("model", "must be the model id the call used, e.g. claude-sonnet-4-5");
  } else if (input.model.length > LIMITS.usageModel.max || CONTROL.test(input.model)) {
    problem("model", `must be at most ${LIMITS.usageModel.max} printable characters`);
  }
  const key = input.idempotencyKey;
  if (typeof key !== "string" || key.length === 0) {
    problem("idempotency_key", "is required; send one unique key per model call (e.g. the response id)");
  } else if (key.length > LIMITS.idempotencyKey.max || CONTROL.test(key)) {
    problem("idempotency_key", `must be at most ${LIMITS.idempotencyKey.max} printable characters`);
  }
  const usage = input.usage as Partial<Record<(typeof USAGE_FIELDS)[number][0], unknown>> | undefined;
  if (typeof usage !== "object" || usage === null) {
    problem("usage", "is required");
  } else {
    for (const [field, wire] of USAGE_FIELDS) {
      const value = usage[field] ?? (field === "cacheCreation1hInputTokens" ? 0 : undefined);
      if (
        typeof value !== "number" ||
        !Number.isInteger(value) ||
        value < 0 ||
        value > MAX_TOKENS_PER_FIELD
      ) {
        problem(
          `usage.${wire}`,
          `must be a whole number from 0 to ${MAX_TOKENS_PER_FIELD}, got ${String(value)}`,
        );
      }
    }
    const w1h = usage.cacheCreation1hInputTokens;
    if (typeof w1h === "number" && typeof usage.cacheCreationInputTokens === "number") {
      if (w1h > usage.cacheCreationInputTokens) {
        problem(
          "usage.cache_creation_1h_input_tokens",
          "must not exceed cache_creation_input_tokens (it is the 1-hour part of it)",
        );
      }
    }
  }
  if (input.occurredAt !== undefined) {
    const ms = input.occurredAt instanceof Date ? input.occurredAt.getTime() : Number.NaN;
    if (!Number.isFinite(ms)) problem("occurred_at", "must be a valid timestamp");
    else if (ms > nowMs + MAX_FUTURE_MS) problem("occurred_at", "is more than 24 hours in the future");
  }
  const [first] = problems;
  if (first !== undefined) {
    // The message names the first problem; the BadRequest details list every one (docs/api.md, "Errors and limits").
    const rest = problems.length - 1;
    const more = rest > 0 ? ` (and ${rest} more in the details)` : "";
    throw invalidArgument(`invalid usage record: ${first.field}: ${first.description}${more}`, problems);
  }
  const u = input.usage;
  return { ...u, cacheCreation1hInputTokens: u.cacheCreation1hInputTokens ?? 0 };
}

function canonicalRequest(caller: Caller, input: RecordUsageInput, usage: TokenUsage): string {
  // Fixed key order, so equal requests give equal strings. occurredAt counts only when given.
  return JSON.stringify({
    provider: input.provider,
    model: input.model,
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_read_input_tokens: usage.cacheReadInputTokens,
    cache_creation_input_tokens: usage.cacheCreationInputTokens,
    cache_creation_1h_input_tokens: usage.cacheCreation1hInputTokens ?? 0,
    project_id: caller.projectId,
    user_id: caller.userId,
    session_id: caller.sessionId,
    run_id: caller.runId,
    occurred_at_ms: input.occurredAt ? input.occurredAt.getTime() : null,
  });
}

/** The `usage_recorded` event of a new record. */
export function usageRecordedEvent(record: UsageRecordChange, recordId: number): NewEvent {
  const [inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens] = record.tokenCounts;
  const { costUsd } = record;
  return {
    type: "usage_recorded",
    tenantId: record.tenantId,
    sessionId: record.sessionId,
    runId: record.runId,
    attributes: {
      record_id: recordId,
      provider: record.provider,
      model: record.model,
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      cache_read_input_tokens: cacheReadInputTokens,
      cache_creation_input_tokens: cacheCreationInputTokens,
      cost_known: costUsd !== null,
      ...(costUsd !== null ? { cost_usd: costUsd } : {}),
    },
  };
}

/**
 * The answer to a key recorded before: the original result when `request` repeats it, else
 * already_exists naming what differs.
 */
export function duplicateResult(existing: RecordRow, request: string): RecordUsageResult {
  if (existing.request_json !== request) {
    const before = JSON.parse(existing.request_json) as Record<string, unknown>;
    const after = JSON.parse(request) as Record<string, unknown>;
    const differing = Object.keys(after).filter((k) => before[k] !== after[k]);
    throw new WayfindError(
      "already_exists",
      `idempotency_key was already used for a different usage record (differs in: ${differing.join(", ")}); ` +
        "a retry must resend the same values, a new model call needs a new key",
    );
  }
  return {
    recordId: existing.id,
    costUsd: existing.cost_usd,
    uncachedCostUsd: existing.uncached_cost_usd,
    ...(existing.unknown_cost_reason ? { unknownCostReason: existing.unknown_cost_reason } : {}),
    duplicate: true,
    occurredAt: new Date(existing.occurred_at_ms),
  };
}
