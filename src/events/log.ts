import type Database from "better-sqlite3";
import { distinctLeadingValues } from "../database/distinct.ts";
import type { Db } from "../database/sqlite.ts";
import {
  afterCommit,
  beforeWriteTransaction,
  inWriteTransaction,
  onRollback,
} from "../database/transaction.ts";
import { invalidArgument } from "../errors.ts";
import type { EventAttributeValue, EventSink, EventType, NewEvent, StoredEvent } from "./event.ts";
import {
  type EventSubscription,
  type Filter,
  type SubscribeOptions,
  Subscription,
  type SubscriptionSource,
} from "./subscription.ts";

export interface EventLogOptions {
  /** Keep at most this many events (default 100 000). */
  readonly maxEvents?: number;
  /** Keep events at most this old (default 168 h). */
  readonly maxAgeHours?: number;
  /** Live events a subscriber may have waiting before it falls back to catch-up from SQLite (default 1024). */
  readonly subscriberQueueLimit?: number;
  /** Rows per SQLite read while a subscriber catches up (default 256). */
  readonly replayPageSize?: number;
  /** How often expired events are deleted (default 60 s). */
  readonly pruneIntervalMs?: number;
  /** Clock, for tests. */
  readonly now?: () => number;
  /** Called when an event cannot be stored; emit never throws into the request path. */
  readonly onError?: (err: unknown) => void;
  /**
   * Told each event once it is committed (before live subscribers get it), e.g. to count it. On a
   * replica, only the events its own calls caused (see `emit`).
   */
  readonly onCommitted?: (event: StoredEvent) => void;
}

interface Row {
  id: bigint;
  ts_ms: bigint;
  type: string;
  tenant_id: string | null;
  session_id: string | null;
  run_id: string | null;
  attributes: string;
}

const STATE_PRUNED_THROUGH = "pruned_through";

/**
 * The append-only event log of docs/design.md §5 (SQLite table `events`, see schema.ts).
 *
 * Two ways in, by what the event reports (ids are assigned in memory either way: one process writes
 * a given database):
 * - A state change. The domain emits inside the `writeTransaction` that makes the change, so the row
 *   is inserted in that same transaction (cheap inside an open transaction: no extra fsync): a crash
 *   keeps both or neither. Live subscribers get the event right after the commit, before
 *   writeTransaction returns; a rolled-back change delivers nothing (its id is given to the next event).
 * - Anything else (a query, a read, an index build): nothing would be lost but the report itself, so
 *   the row is queued and written with the others in one transaction per event-loop turn (an
 *   autocommit INSERT pays for a commit of its own, batched ones share one), and live subscribers
 *   get it once that transaction has committed. So no consumer ever holds the id of an event a crash
 *   lost: after a restart ids continue from the last stored one, and an id a consumer saw is never
 *   reused. Queued rows are also flushed before every write transaction opens, so ids reach
 *   consumers in order.
 *
 * Replay reads flush the queue first, and no JavaScript runs between a commit and its delivery, so
 * SQLite holds every delivered-or-deliverable event up to `latestId` whenever a subscriber reads it.
 * Because a subscriber switches from replay to live delivery in the same tick as its last read, no
 * event can fall between the two: no gap, no duplicate.
 *
 * Retention is exact for readers (events past `maxEvents` or `maxAgeHours` are never delivered) and
 * lazy for storage (rows are deleted in small batches on insert and on a timer).
 */
export class EventLog implements EventSink, SubscriptionSource {
  private readonly maxEvents: bigint;
  private readonly maxAgeMs: number;
  private readonly queueLimit: number;
  private readonly pageSize: number;
  private readonly pruneSlack: bigint;
  private readonly now: () => number;
  private readonly onError: (err: unknown) => void;
  private readonly insertStmt: Database.Statement;
  private readonly insertBatch: (rows: readonly PendingRow[]) => void;
  /** Emitted but not yet written (nor delivered); flushed in one transaction per event-loop turn. */
  private pending: { row: PendingRow; stored: StoredEvent; own: boolean }[] = [];
  private flushScheduled: NodeJS.Immediate | undefined;
  private readonly lastExpiredStmt: Database.Statement<[number], { id: bigint }>;
  private readonly deleteStmt: Database.Statement;
  private readonly saveStateStmt: Database.Statement;
  private readonly pageStmts = new Map<string, Database.Statement>();
  private readonly subscribers = new Set<Subscription>();
  private readonly timer: NodeJS.Timeout | undefined;
  private lastIdValue: bigint;
  private lastTs: number;
  private prunedThrough: bigint;
  private closed = false;
  private readonly onCommitted: ((event: StoredEvent) => void) | undefined;

  constructor(
    private readonly db: Db,
    options: EventLogOptions = {},
  ) {
    this.maxEvents = BigInt(Math.max(1, Math.floor(options.maxEvents ?? 100_000)));
    this.maxAgeMs = (options.maxAgeHours ?? 168) * 3_600_000;
    this.queueLimit = Math.max(1, options.subscriberQueueLimit ?? 1024);
    this.pageSize = Math.max(1, options.replayPageSize ?? 256);
    // Delete in batches of ~1% (64..1024 rows): cheap per insert, short per delete.
    this.pruneSlack = BigInt(Math.min(1024, Math.max(64, Math.floor(Number(this.maxEvents) / 100))));
    this.now = options.now ?? Date.now;
    this.onError = options.onError ?? (() => {});
    this.onCommitted = options.onCommitted;

    this.insertStmt = db
      .prepare(
        "INSERT INTO events (id, ts_ms, type, tenant_id, session_id, run_id, attributes) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .safeIntegers(true);
    this.insertBatch = db.transaction((rows: readonly PendingRow[]) => {
      for (const r of rows) this.insertStmt.run(...r);
    });
    // Timestamps never go backwards (see emit), so the newest expired event is found through the ts index.
    this.lastExpiredStmt = db
      .prepare<[number], { id: bigint }>(
        "SELECT id FROM events WHERE ts_ms < ? ORDER BY ts_ms DESC, id DESC LIMIT 1",
      )
      .safeIntegers(true);
    this.deleteStmt = db.prepare("DELETE FROM events WHERE id <= ?").safeIntegers(true);
    this.saveStateStmt = db
      .prepare(
        "INSERT INTO events_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      )
      .safeIntegers(true);

    const seq = db
      .prepare<[], { seq: bigint }>("SELECT seq FROM sqlite_sequence WHERE name = 'events'")
      .safeIntegers(true)
      .get();
    this.lastIdValue = seq?.seq ?? 0n;
    const lastTs = db
      .prepare<[], { ts: bigint | null }>("SELECT max(ts_ms) AS ts FROM events")
      .safeIntegers(true)
      .get();
    this.lastTs = Number(lastTs?.ts ?? 0n);
    const pruned = db
      .prepare<[string], { value: bigint }>("SELECT value FROM events_state WHERE key = ?")
      .safeIntegers(true)
      .get(STATE_PRUNED_THROUGH);
    this.prunedThrough = pruned?.value ?? 0n;

    const interval = options.pruneIntervalMs ?? 60_000;
    if (interval > 0) {
      this.timer = setInterval(() => this.safePrune(), interval);
      this.timer.unref();
    }
    beforeWriteTransaction(db, () => this.flush());
    this.safePrune();
  }

  /** Id of the newest event ever emitted (0n when none). */
  get latestId(): bigint {
    return this.lastIdValue;
  }

  /**
   * How far behind the live subscribers are (the newest event id minus the slowest one's cursor), and
   * how often their queues overflowed or retention deleted events they had not read yet (gaps).
   */
  subscriberLag(): { maxLag: number; overflows: number; gaps: number } {
    let maxLag = 0;
    let overflows = 0;
    let gaps = 0;
    for (const sub of this.subscribers) {
      maxLag = Math.max(maxLag, Number(this.lastIdValue - sub.cursor));
      overflows += sub.overflows;
      gaps += sub.gaps;
    }
    return { maxLag, overflows, gaps };
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /**
   * `applied` is for a replica applying a change (src/replication): the event is stamped with the
   * change's time instead of the clock's, so every replica stores the same event, and `own` says
   * whether this replica's own call caused it — only then is it told to `onCommitted` (metrics,
   * export), so a fleet counts and exports each event once. Subscribers get every event.
   */
  emit(event: NewEvent, applied?: { readonly atMs: number; readonly own: boolean }): void {
    if (this.closed) return;
    // Monotonic timestamps keep age-based retention a prefix of the id order.
    const timestampMs = Math.max(applied?.atMs ?? this.now(), this.lastTs);
    const own = applied?.own ?? true;
    // "" is how callers without a tenant/session/run arrive; store it as absent so replay and live agree.
    const tenantId = event.tenantId || undefined;
    const sessionId = event.sessionId || undefined;
    const runId = event.runId || undefined;
    let attributes: string;
    try {
      attributes = JSON.stringify(event.attributes);
    } catch (err) {
      this.onError(err);
      return;
    }
    const id = this.lastIdValue + 1n;
    const row: PendingRow = [
      id,
      timestampMs,
      event.type,
      tenantId ?? null,
      sessionId ?? null,
      runId ?? null,
      attributes,
    ];
    const stored = makeEvent(
      id,
      timestampMs,
      event.type,
      tenantId,
      sessionId,
      runId,
      Object.freeze({ ...event.attributes }),
    );
    const previous = { id: this.lastIdValue, ts: this.lastTs };
    this.lastTs = timestampMs;
    this.lastIdValue = id;
    if (inWriteTransaction(this.db)) {
      // Part of the caller's change: if this insert fails, the change fails with it (all or nothing).
      // A rollback gives the id back: nobody saw it, and replicas applying a change again after a
      // failed attempt must number its events as the others did.
      onRollback(this.db, () => {
        this.lastIdValue = previous.id;
        this.lastTs = previous.ts;
      });
      this.insertStmt.run(...row);
      afterCommit(this.db, () => {
        this.deliver(stored, own);
        this.pruneIfOverCount();
      });
    } else {
      this.pending.push({ row, stored, own });
      if (this.pending.length >= MAX_PENDING) this.flush();
      else if (!this.flushScheduled) this.flushScheduled = setImmediate(() => this.flush());
    }
  }

  private deliver(event: StoredEvent, own: boolean): void {
    if (own) this.onCommitted?.(event);
    for (const sub of this.subscribers) sub.offer(event);
  }

  /** Writes pending events now. Runs once per event-loop turn after an emit, before any replay read, and on close. */
  flush(): void {
    if (this.flushScheduled) {
      clearImmediate(this.flushScheduled);
      this.flushScheduled = undefined;
    }
    if (this.pending.length === 0) return;
    const queued = this.pending;
    this.pending = [];
    try {
      this.insertBatch(queued.map((entry) => entry.row));
    } catch (err) {
      // Not stored, so not delivered either: no consumer learns an id that replay would lack.
      this.onError(err);
      return;
    }
    for (const entry of queued) this.deliver(entry.stored, entry.own);
    this.pruneIfOverCount();
  }

  /** Count-based retention on insert, every ~1% of maxEvents, so the table stays bounded between timer runs. */
  private pruneIfOverCount(): void {
    if (this.lastIdValue - this.prunedThrough > this.maxEvents + this.pruneSlack) this.safePrune();
  }

  /**
   * The cursor just before the first retained event at or after `timeMs`: events' times never go
   * backwards, so it is found through the time index, however many events are retained.
   */
  cursorAt(timeMs: number): bigint {
    this.flush();
    return this.lastExpiredStmt.get(timeMs)?.id ?? this.prunedThrough;
  }

  /** Tenants with retained events, in order, after `after` (at most `limit`; no tenant "" left out). */
  tenantIds(after: string, limit: number): string[] {
    this.flush();
    return distinctLeadingValues(this.db, "events", "tenant_id", after, limit);
  }

  /**
   * Streams matching events: retained ones after `afterId` first (read from SQLite in pages), then live
   * ones. A cursor older than retention continues from the oldest retained event and reports the gap
   * through `onGap` / `gaps`. Ends when `signal` aborts, the consumer stops, or the log closes.
   */
  subscribe(options: SubscribeOptions): EventSubscription {
    if (options.afterId !== undefined && (options.afterId < 0n || options.afterId > this.lastIdValue)) {
      throw invalidArgument(
        `resume cursor ${options.afterId} is not a known event id (newest is ${this.lastIdValue}); ` +
          "resume from an id this server delivered, or omit the cursor to start from now",
      );
    }
    // Queued events were emitted before this subscription: deliver them to the others first.
    this.flush();
    const sub = new Subscription(this, options, this.queueLimit);
    if (this.closed) sub.end();
    else if (!options.signal.aborted) this.subscribers.add(sub);
    return sub;
  }

  /** Deletes events beyond retention now. Also runs on a timer and every ~1% of maxEvents inserts. */
  prune(): void {
    const floor = this.retentionFloor();
    if (floor <= this.prunedThrough) return;
    this.db.transaction(() => {
      this.deleteStmt.run(floor);
      this.saveStateStmt.run(STATE_PRUNED_THROUGH, floor);
    })();
    this.prunedThrough = floor;
  }

  /** Ends every subscription and stops the prune timer. The database stays open: its owner closes it. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const sub of [...this.subscribers]) sub.end();
    this.subscribers.clear();
  }

  /** @internal Every event id <= the floor is deleted or past retention. */
  retentionFloor(): bigint {
    // The age check reads SQLite, so pending rows must be there too.
    this.flush();
    let floor = this.prunedThrough;
    const byCount = this.lastIdValue - this.maxEvents;
    if (byCount > floor) floor = byCount;
    const expired = this.lastExpiredStmt.get(this.now() - this.maxAgeMs);
    if (expired && expired.id > floor) floor = expired.id;
    return floor;
  }

  /** @internal One page of matching events with id > afterId, oldest first. */
  readPage(filter: Filter, afterId: bigint, limit: number): StoredEvent[] {
    this.flush();
    const where = ["id > ?"];
    const params: (string | bigint | number)[] = [afterId];
    if (filter.types) {
      where.push(`type IN (${filter.types.map(() => "?").join(", ")})`);
      params.push(...filter.types);
    }
    for (const [column, value] of [
      ["tenant_id", filter.tenantId],
      ["session_id", filter.sessionId],
    ] as const) {
      if (value === undefined) continue;
      // "" means "emitted without one", stored as NULL (see emit).
      if (value === "") where.push(`${column} IS NULL`);
      else {
        where.push(`${column} = ?`);
        params.push(value);
      }
    }
    if (filter.tool !== undefined) {
      where.push("json_extract(attributes, '$.tool') = ?");
      params.push(filter.tool);
    }
    const sql = `SELECT id, ts_ms, type, tenant_id, session_id, run_id, attributes FROM events WHERE ${where.join(
      " AND ",
    )} ORDER BY id LIMIT ?`;
    let stmt = this.pageStmts.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql).safeIntegers(true);
      this.pageStmts.set(sql, stmt);
    }
    const rows = stmt.all(...params, limit) as Row[];
    return rows.map((r) =>
      makeEvent(
        r.id,
        Number(r.ts_ms),
        r.type as EventType,
        r.tenant_id ?? undefined,
        r.session_id ?? undefined,
        r.run_id ?? undefined,
        Object.freeze(JSON.parse(r.attributes) as Record<string, EventAttributeValue>),
      ),
    );
  }

  /** @internal */
  unsubscribe(sub: Subscription): void {
    this.subscribers.delete(sub);
  }

  get pageLimit(): number {
    return this.pageSize;
  }

  private safePrune(): void {
    try {
      this.prune();
    } catch (err) {
      this.onError(err);
    }
  }
}

type PendingRow = [bigint, number, EventType, string | null, string | null, string | null, string];

/** Flush synchronously past this many pending events, to bound memory in a long synchronous burst. */
const MAX_PENDING = 4096;

function makeEvent(
  id: bigint,
  timestampMs: number,
  type: EventType,
  tenantId: string | undefined,
  sessionId: string | undefined,
  runId: string | undefined,
  attributes: Readonly<Record<string, EventAttributeValue>>,
): StoredEvent {
  // Absent ids stay absent (not `undefined` keys), so replayed and live events compare equal.
  const event: { -readonly [K in keyof StoredEvent]: StoredEvent[K] } = { id, timestampMs, type, attributes };
  if (tenantId !== undefined) event.tenantId = tenantId;
  if (sessionId !== undefined) event.sessionId = sessionId;
  if (runId !== undefined) event.runId = runId;
  return Object.freeze(event);
}
