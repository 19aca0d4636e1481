import { setImmediate as nextTurn } from "node:timers/promises";
import type pg from "pg";
import type { Db, Migration } from "../database/sqlite.ts";
import { writeTransaction } from "../database/transaction.ts";
import { WayfindError } from "../errors.ts";
import { type Change, type ChangeLog, listenForChanges } from "./change-log.ts";

/**
 * Applies one change to this replica's SQLite copy, inside the follower's write transaction (so it
 * may register `afterCommit` work, e.g. updating in-memory indexes). Must be deterministic in the
 * change: every replica applies the same changes in the same order. A WayfindError is a refusal every
 * replica makes alike (a duplicate key used for other values): the change's own writes are rolled
 * back, the follower goes on, and the refusal is its outcome. Any other error stops the page.
 */
export type ChangeApplier = (change: Change) => unknown;

/** What applying a change gave: the applier's result, or the refusal it threw. */
export type ApplyOutcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: WayfindError };

export const FOLLOWER_MIGRATIONS: readonly Migration[] = [
  {
    id: "replication/001-state",
    up: "CREATE TABLE replication_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
  },
  {
    id: "replication/002-cluster",
    // The PostgreSQL database (its wayfind_cluster id) this copy follows: one, for good.
    up: "CREATE TABLE replication_cluster (id TEXT PRIMARY KEY)",
  },
];

const APPLIED_KEY = "applied_seq";
const SAVE_STATE =
  "INSERT INTO replication_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value";
/** The commit time of that change: the log's clock, which retention on every replica counts from. */
const APPLIED_AT_KEY = "applied_at_ms";

/**
 * The log no longer holds the changes this copy needs next: it was compacted while this replica was
 * out of reach for longer than the replica timeout. Only a restart (which restores the copy from the
 * newest snapshot) brings it back.
 */
export class CopyBehindLog extends Error {
  constructor(applied: number, oldest: number) {
    super(
      `this copy has applied the shared log through change ${applied}, but the log now starts at ${oldest}: ` +
        "it was compacted while this replica was out of reach for longer than " +
        "storage.postgres.compaction.replica_timeout_seconds; restart the replica to restore its copy from the newest snapshot",
    );
    this.name = "CopyBehindLog";
  }
}

/** The seq of the last change applied to a copy (0: none), read from its replication_state. */
export function readAppliedSeq(db: Db): number {
  return (
    db
      .prepare<[string], { value: number }>("SELECT value FROM replication_state WHERE key = ?")
      .get(APPLIED_KEY)?.value ?? 0
  );
}

/**
 * Makes a data folder's file (a copy of it) the start of a new fleet's copies: claimed by the shared
 * database `clusterId`, holding its log through change 0 as of `atMs` (the clock retention counts by).
 */
export function adoptAsCopy(db: Db, clusterId: string, atMs: number): void {
  db.prepare("INSERT INTO replication_cluster (id) VALUES (?)").run(clusterId);
  const upsert = db.prepare(SAVE_STATE);
  upsert.run(APPLIED_KEY, 0);
  upsert.run(APPLIED_AT_KEY, atMs);
}

export interface FollowerOptions {
  readonly log: ChangeLog;
  /** This replica's SQLite copy, opened with FOLLOWER_MIGRATIONS. */
  readonly db: Db;
  /** By change kind. A kind without an applier stops the follower: order matters, nothing is skipped. */
  readonly appliers: ReadonlyMap<string, ChangeApplier>;
  /** Changes read and applied per SQLite transaction (default 200). */
  readonly pageSize?: number;
  /** Told each change's outcome once its page is committed, in seq order (a writer waits for its own). */
  readonly onApplied?: (change: Change, outcome: ApplyOutcome) => void;
}

/**
 * Keeps a replica's SQLite copy up to date with the change log (docs/replicas.md "Followers"): changes
 * are applied in seq order, a page per write transaction that also stores the last applied seq, so a
 * crash re-applies nothing and skips nothing. One catch-up runs at a time; a wake-up during it runs
 * another right after.
 */
export class Follower {
  private readonly options: FollowerOptions;
  private readonly readApplied: () => number;
  private readonly readAppliedAt: () => number;
  private readonly saveApplied: (seq: number, atMs: number) => void;
  private running: Promise<void> | undefined;
  private again = false;
  /** The head query in flight, and the one calls that came after it was sent wait for. */
  private headSent: Promise<number> | undefined;
  private headQueued: Promise<number> | undefined;
  private applyingChange: Change | undefined;
  /** When a read of the log last showed this copy holding every committed change (epoch ms). */
  private confirmedAt = 0;

  constructor(options: FollowerOptions) {
    this.options = options;
    const select = options.db.prepare<[string], { value: number }>(
      "SELECT value FROM replication_state WHERE key = ?",
    );
    const upsert = options.db.prepare(SAVE_STATE);
    this.readApplied = () => select.get(APPLIED_KEY)?.value ?? 0;
    this.readAppliedAt = () => select.get(APPLIED_AT_KEY)?.value ?? 0;
    this.saveApplied = (seq, atMs) => {
      upsert.run(APPLIED_KEY, seq);
      upsert.run(APPLIED_AT_KEY, atMs);
    };
  }

  /** The change being applied right now (inside its write transaction), else undefined. */
  get applying(): Change | undefined {
    return this.applyingChange;
  }

  /** The seq of the last change applied to the local copy. */
  get applied(): number {
    return this.readApplied();
  }

  /**
   * When the last change applied to the copy was committed (epoch ms; 0 before the first): the time
   * every replica has reached at the same point of the log, unlike its own clock.
   */
  get appliedAtMs(): number {
    return this.readAppliedAt();
  }

  /**
   * The latest time (epoch ms) this copy is known to have held every change committed by then: when
   * the read of the log that showed nothing more was sent (a catch-up's last page, or a fence's
   * head). 0 before the first. How stale a copy may be when the database stops answering.
   */
  get confirmedAtMs(): number {
    return this.confirmedAt;
  }

  /** Resolves once no catch-up is running (the one running, if any, has finished or failed). */
  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /** Applies every change committed so far; resolves when done (joins a catch-up already running). */
  catchUp(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = async () => {
      try {
        do {
          this.again = false;
          while (await this.applyNextPage());
        } while (this.again);
      } finally {
        this.running = undefined;
      }
    };
    this.running = run();
    return this.running;
  }

  /**
   * Resolves once every change committed before this call is applied locally: what makes a write
   * through another replica visible to this replica's next read. Concurrent calls share queries of
   * the log's head, but only one sent after they came: a query already in flight may have read the
   * head before a write this call must see was committed.
   */
  async fence(): Promise<void> {
    const askedAt = Date.now();
    const head = await this.headSinceNow();
    while (this.applied < head) await this.catchUp();
    this.confirm(askedAt);
  }

  private confirm(askedAt: number): void {
    this.confirmedAt = Math.max(this.confirmedAt, askedAt);
  }

  private headSinceNow(): Promise<number> {
    if (this.headSent === undefined) return this.sendHeadQuery();
    this.headQueued ??= this.headSent.then(
      () => this.sendQueuedHeadQuery(),
      () => this.sendQueuedHeadQuery(),
    );
    return this.headQueued;
  }

  private sendQueuedHeadQuery(): Promise<number> {
    this.headQueued = undefined;
    return this.sendHeadQuery();
  }

  private sendHeadQuery(): Promise<number> {
    const query: Promise<number> = this.options.log.head().finally(() => {
      if (this.headSent === query) this.headSent = undefined;
    });
    this.headSent = query;
    return query;
  }

  /** Reads the next page after the applied seq and applies it; false when there was nothing. */
  private async applyNextPage(): Promise<boolean> {
    const { log, db, appliers, pageSize = 200, onApplied } = this.options;
    const askedAt = Date.now();
    const changes = await log.after(this.applied, pageSize);
    if (changes.length === 0) {
      this.confirm(askedAt);
      return false;
    }
    // Reading a large page (thousands of tools' rows) is a turn's work already; applying it gets its own.
    await nextTurn();
    const outcomes: [Change, ApplyOutcome][] = [];
    writeTransaction(db, () => {
      // Read again inside the transaction: another catch-up of this copy may have applied the page.
      let applied = this.readApplied();
      let appliedAtMs = this.readAppliedAt();
      for (const change of changes) {
        if (change.seq <= applied) continue;
        if (change.seq !== applied + 1) throw new CopyBehindLog(applied, change.seq);
        const apply = appliers.get(change.kind);
        if (apply === undefined)
          throw new Error(
            `change ${change.seq} is of kind "${change.kind}", which this replica cannot apply (an older version?)`,
          );
        outcomes.push([change, this.applyOne(apply, change)]);
        applied = change.seq;
        appliedAtMs = change.committedAt.getTime();
      }
      this.saveApplied(applied, appliedAtMs);
    });
    for (const [change, outcome] of outcomes) onApplied?.(change, outcome);
    return true;
  }

  /** One change in a savepoint of the page's transaction, so a refusal undoes only its own writes. */
  private applyOne(apply: ChangeApplier, change: Change): ApplyOutcome {
    this.applyingChange = change;
    try {
      return { ok: true, value: writeTransaction(this.options.db, () => apply(change)) };
    } catch (error) {
      if (error instanceof WayfindError) return { ok: false, error };
      throw error;
    } finally {
      this.applyingChange = undefined;
    }
  }
}

/**
 * Runs `follower` until the returned function is called: a catch-up on every NOTIFY (the wake-up) and
 * every `pollMs` (default 1 s), so a notification lost while disconnected delays a change by at most
 * a poll and loses nothing.
 */
export async function follow(
  follower: Follower,
  connection: pg.ClientConfig,
  options: { pollMs?: number; onError?: (error: Error) => void; onCaughtUp?: () => void } = {},
): Promise<() => Promise<void>> {
  const onError = options.onError ?? (() => {});
  const wake = () => {
    follower.catchUp().then(options.onCaughtUp, onError);
  };
  const stopListening = await listenForChanges(connection, wake, { onError });
  const timer = setInterval(wake, options.pollMs ?? 1_000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await stopListening();
  };
}
