import { createHash } from "node:crypto";
import { hostname } from "node:os";
import pg from "pg";
import type { Db } from "../database/sqlite.ts";
import { errorReason, WayfindError } from "../errors.ts";
import {
  type Change,
  ChangeLog,
  inTransaction,
  migratePostgres,
  type NewChange,
  type PostgresMigration,
  withClient,
} from "./change-log.ts";
import { type CompactionReport, type CompactionSettings, startCompaction } from "./compaction.ts";
import { type ApplyOutcome, CopyBehindLog, Follower, follow, readAppliedSeq } from "./follower.ts";
import { type HeldLease, holdLease, type LeaseOptions } from "./lease.ts";
import { type PrepareCopyOptions, prepareCopy, SnapshotStore } from "./snapshots.ts";
import {
  type ApplyContext,
  EVENTS_KIND,
  type ReplicatedWrite,
  type SharedDatabase,
  type SharedWrite,
  type StateWriter,
} from "./writes.ts";

/** The shared PostgreSQL a replica writes and follows (the `storage.postgres` settings). */
export interface PostgresConfig {
  /** postgres://user:password@host:port/database (libpq URL); never logged with its password. */
  readonly url: string;
  /** Connections this replica keeps open (writes, catch-up, fences); one more listens for wake-ups. */
  readonly poolSize: number;
  /** How the shared change log is kept bounded (docs/replicas.md "Compaction"). */
  readonly compaction: CompactionSettings;
}

export interface ReplicaOptions {
  readonly postgres: PostgresConfig;
  /** Tells this replica's writes from the others' in the log, and its applied seq in compaction's table. */
  readonly id: string;
  /** This replica's SQLite copy, opened with FOLLOWER_MIGRATIONS among its migrations. */
  readonly db: Db;
  /**
   * True when the copy holds state of its own (written by a server that ran without PostgreSQL): such
   * a file cannot become a replica's copy, whose every row must come from the change log.
   */
  readonly holdsStandaloneState: () => boolean;
  readonly onError: (error: Error) => void;
  /**
   * Told when the shared database stops answering (false: writes fail, reads are served from the
   * local copy, stale) and when it answers again and the copy has caught up (true).
   */
  readonly onReachability?: (reachable: boolean) => void;
  /** Told what each round of log compaction did, on the replica that ran it. */
  readonly onCompacted?: (report: CompactionReport) => void;
}

/**
 * How long a call waits for the fence before it is served from the local copy, marked stale. A slow
 * answer (a loaded machine) costs that call only; an error (refused, dropped connection, or no
 * connection within CONNECT_TIMEOUT_MS) means the database is away.
 */
const FENCE_BUDGET_MS = 1_000;
/** A connection the database does not accept within this counts as the database being down. */
const CONNECT_TIMEOUT_MS = 2_000;

/** Changes appended in one transaction at most (the log's lock is taken once per append). */
const MAX_CHANGES_PER_APPEND = 500;

interface Queued {
  readonly origin: string;
  readonly settle: (outcome: ApplyOutcome) => void;
}
/** A change for every replica to apply. */
interface QueuedChange extends Queued {
  readonly change: NewChange;
}
/** A write of the shared database's own tables (SharedWrite). */
interface QueuedShared extends Queued {
  readonly shared: SharedWrite<unknown, unknown>;
  readonly payload: unknown;
  readonly tenantId: string;
}
/** A write waiting for the next append. */
type QueuedWrite = QueuedChange | QueuedShared;

/**
 * One replica of a fleet sharing a PostgreSQL database (docs/replicas.md): its writes go to the
 * change log and come back through its follower like everyone else's, so every replica applies the
 * same changes in the same order. Writes made while an append is in flight wait and go together in
 * the next one (group commit): the appends the log takes per second are capped by its lock
 * (docs/replicas.md), so each carries every change waiting for it.
 */
export class Replica implements StateWriter, SharedDatabase {
  private readonly options: ReplicaOptions;
  private readonly pool: pg.Pool;
  private readonly log: ChangeLog;
  private follower: Follower | undefined;
  private stopFollowing: (() => Promise<void>) | undefined;
  private stopCompaction: (() => Promise<void>) | undefined;
  private queue: QueuedWrite[] = [];
  /** Origin → settle, for writes appended by this replica and not applied here yet. */
  private readonly waiting = new Map<string, (outcome: ApplyOutcome) => void>();
  private appending: Promise<void> | undefined;
  /** The catch-up applying the last append here, which close waits for. */
  private applyingAppended: Promise<void> | undefined;
  private writeCount = 0;
  private closed = false;
  /** Set when the log was compacted past this copy: it can apply nothing more until restarted. */
  private behindLog: CopyBehindLog | undefined;
  private isReachable = true;

  private constructor(options: ReplicaOptions, pool: pg.Pool, log: ChangeLog) {
    this.options = options;
    this.pool = pool;
    this.log = log;
  }

  /**
   * Connects to PostgreSQL, migrates its side, and checks that the SQLite copy follows this database
   * (or is new, and from now on will). Nothing is applied until `follow`.
   */
  static async connect(options: ReplicaOptions): Promise<Replica> {
    const pool = connectPool(options.postgres, options.postgres.poolSize, options.onError);
    try {
      const log = await ChangeLog.open(pool);
      claimCopy(options, await log.clusterId());
      await log.reportApplied(options.id, readAppliedSeq(options.db));
      return new Replica(options, pool, log);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }

  /**
   * Run before the copy is opened: a new copy starts from the newest snapshot, and one that fell
   * behind the compacted log is replaced by it (see prepareCopy). Returns the seq restored, if any.
   */
  static async prepareCopy(
    postgres: PostgresConfig,
    options: Omit<PrepareCopyOptions, "log" | "snapshots"> & { readonly onError: (error: Error) => void },
  ): Promise<number | undefined> {
    const pool = connectPool(postgres, 2, options.onError);
    try {
      const log = await ChangeLog.open(pool);
      return await prepareCopy({ ...options, log, snapshots: new SnapshotStore(pool) });
    } finally {
      await pool.end().catch(() => undefined);
    }
  }

  /** This replica's id: the origin of its writes in the log. */
  get id(): string {
    return this.options.id;
  }

  /**
   * Applies the log from where the copy stopped, with `writes` as the kinds this replica knows, then
   * keeps applying as changes arrive (NOTIFY, and a poll every second). Writes wait until this runs.
   */
  async follow(writes: readonly ReplicatedWrite<never, unknown>[]): Promise<void> {
    const appliers = new Map(
      writes.map((write) => [
        write.kind,
        (change: Change) => write.apply(change.payload as never, applyContext(change)),
      ]),
    );
    const follower = new Follower({
      log: this.log,
      db: this.options.db,
      appliers,
      onApplied: (change, outcome) => {
        const settle = this.waiting.get(change.origin);
        if (settle === undefined) return;
        this.waiting.delete(change.origin);
        settle(outcome);
      },
    });
    // Set before the first catch-up: events of the changes it applies must be known as applied ones
    // (`applying`), or they would be reported to the log again instead of stored.
    this.follower = follower;
    await follower.catchUp();
    this.stopFollowing = await follow(follower, connectionOf(this.options.postgres), {
      onError: (error) => {
        this.setReachable(false);
        this.options.onError(error);
        if (error instanceof CopyBehindLog) this.strand(error);
      },
      // The poll keeps trying while the database is away: its first success ends degraded mode.
      onCaughtUp: () => this.setReachable(true),
    });
    this.stopCompaction = startCompaction({
      log: this.log,
      snapshots: new SnapshotStore(this.pool),
      settings: this.options.postgres.compaction,
      replicaId: this.id,
      dataFile: this.options.db.name,
      appliedSeq: () => follower.applied,
      lease: (name, handlers) => this.lease(name, handlers),
      onCompacted: (report) => this.options.onCompacted?.(report),
      onError: this.options.onError,
    });
    this.appendQueued();
  }

  /** Tries to hold the lease `name` (a job one replica runs at a time) until stopped. */
  lease(name: string, handlers: Pick<LeaseOptions, "onAcquired" | "onLost">): HeldLease {
    return holdLease(connectionOf(this.options.postgres), name, {
      ...handlers,
      onError: this.options.onError,
    });
  }

  /** The seq of the last change this replica's copy applied. */
  get appliedSeq(): number {
    return this.follower?.applied ?? 0;
  }

  /** When the last change this replica applied was committed (epoch ms; 0 before the first). */
  get appliedAtMs(): number {
    return this.follower?.appliedAtMs ?? 0;
  }

  /**
   * The latest time (epoch ms) this copy is known to have held every change committed by then (see
   * Follower.confirmedAtMs); 0 before the first catch-up, and for good once the log was compacted past it.
   */
  get currentAsOfMs(): number {
    return this.behindLog ? 0 : (this.follower?.confirmedAtMs ?? 0);
  }

  /** False while the shared database does not answer: writes fail, reads are served stale. */
  get reachable(): boolean {
    return this.isReachable;
  }

  private setReachable(reachable: boolean): void {
    if (this.isReachable === reachable || this.closed) return;
    this.isReachable = reachable;
    this.options.onReachability?.(reachable);
  }

  /**
   * The change being applied (inside its transaction), so the events it reports get its time, and
   * whether this replica made it: every replica stores the fleet's events, but only the one whose call
   * caused an event counts it in its metrics and exports it, so a fleet reports each event once.
   */
  get applying(): (ApplyContext & { readonly own: boolean }) | undefined {
    const change = this.follower?.applying;
    return change && { ...applyContext(change), own: change.origin.startsWith(`${this.id}/`) };
  }

  write<P, R>(write: ReplicatedWrite<P, R>, payload: P, tenantId = ""): Promise<R> {
    return this.enqueue<R>((origin, settle) => ({
      origin,
      settle,
      change: { kind: write.kind, tenantId, payload: payload as never, origin },
    }));
  }

  writeShared<P, R>(write: SharedWrite<P, R>, payload: P, tenantId: string): Promise<R> {
    return this.enqueue<R>((origin, settle) => ({
      origin,
      settle,
      shared: write as SharedWrite<unknown, unknown>,
      payload,
      tenantId,
    }));
  }

  async migrate(migrations: readonly PostgresMigration[]): Promise<void> {
    await migratePostgres(this.pool, migrations);
  }

  async query<Row>(
    sql: string,
    params: readonly unknown[],
    options: { prepared?: boolean } = {},
  ): Promise<Row[]> {
    // Named by its text: the driver prepares it once on each connection that runs it.
    const name = options.prepared
      ? `wf_${createHash("sha256").update(sql).digest("hex").slice(0, 24)}`
      : undefined;
    try {
      return (await this.pool.query({ text: sql, values: params as unknown[], ...(name ? { name } : {}) }))
        .rows as Row[];
    } catch (error) {
      throw unavailable(`the shared database did not answer (${errorReason(error)})`);
    }
  }

  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return withClient(this.pool, (client) => inTransaction(client, () => work(client)));
  }

  private enqueue<R>(queued: (origin: string, settle: Queued["settle"]) => QueuedWrite): Promise<R> {
    if (this.closed) return Promise.reject(unavailable("this replica is stopping"));
    // Its own write would be committed for the others but never applied here: refused before it is sent.
    if (this.behindLog) return Promise.reject(unavailable(this.behindLog.message));
    return new Promise<R>((resolve, reject) => {
      const origin = `${this.id}/${++this.writeCount}`;
      const settle = (outcome: ApplyOutcome) => {
        if (outcome.ok) resolve(outcome.value as R);
        else reject(outcome.error);
      };
      this.queue.push(queued(origin, settle));
      this.appendQueued();
    });
  }

  /**
   * True once every change committed before the call is applied here. False when that took longer
   * than FENCE_BUDGET_MS, or the shared database is away (degraded mode, entered on an error): the
   * call is then served from the local copy as it is; the background poll ends degraded mode.
   */
  async fence(): Promise<boolean> {
    const follower = this.follower;
    if (follower === undefined || !this.isReachable) return false;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), FENCE_BUDGET_MS);
    });
    try {
      return await Promise.race([follower.fence().then(() => true), timedOut]);
    } catch (error) {
      this.setReachable(false);
      this.options.onError(new Error(`read fence failed: ${errorReason(error)}`));
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Nothing more can be applied: reads stay served from the copy, marked stale, until a restart. */
  private strand(error: CopyBehindLog): void {
    if (this.behindLog) return;
    this.behindLog = error;
    this.setReachable(false);
    void this.stopFollowing?.();
    // Its applied seq must stop being reported: compaction would otherwise wait for it for good.
    void this.stopCompaction?.();
  }

  /** Stops following; writes not appended yet fail, appended ones are applied on the next start. */
  async close(): Promise<void> {
    this.closed = true;
    await this.appending;
    await this.applyingAppended;
    for (const queued of this.queue.splice(0)) {
      queued.settle({ ok: false, error: unavailable("this replica stopped before the write was sent") });
    }
    await this.stopCompaction?.();
    await this.stopFollowing?.();
    // A catch-up a wake-up started just before may still be reading the log.
    await this.follower?.settled();
    await this.pool.end();
  }

  /** Starts an append of everything queued, unless one is running (it takes the queue when done). */
  private appendQueued(): void {
    if (this.appending || this.follower === undefined || this.queue.length === 0) return;
    const follower = this.follower;
    this.appending = (async () => {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_CHANGES_PER_APPEND);
        // A change's writer is answered when it is applied here; a shared write's at commit.
        for (const queued of batch) if ("change" in queued) this.waiting.set(queued.origin, queued.settle);
        const answeredAtCommit: (() => void)[] = [];
        try {
          await this.log.append(
            batch.flatMap((queued) => ("change" in queued ? [queued.change] : [])),
            (client) => this.writeSharedBatch(client, batch, answeredAtCommit),
          );
        } catch (error) {
          this.setReachable(false);
          const refusal = unavailable(`the shared database did not take the write (${errorReason(error)})`);
          this.failAll(batch, refusal);
          for (const queued of batch) if ("shared" in queued) queued.settle({ ok: false, error: refusal });
          continue;
        }
        for (const answer of answeredAtCommit) answer();
        // Applies this batch here (and whatever came before it): its writers are answered from the
        // copy. Not awaited: the next batch is appended while this one is applied (the follower
        // applies in log order whatever overlaps).
        this.applyingAppended = follower.catchUp().catch((error: unknown) => {
          this.options.onError(error instanceof Error ? error : new Error(String(error)));
          if (error instanceof CopyBehindLog) this.strand(error);
          this.failAll(
            batch,
            unavailable(`the write is committed but not applied here yet (${errorReason(error)})`),
          );
        });
      }
    })().finally(() => {
      this.appending = undefined;
      this.appendQueued();
    });
  }

  /**
   * Inside the append's transaction: runs the batch's shared writes, each kind once for all its
   * payloads, and returns the changes carrying the events they report. Each is answered as soon as
   * the transaction commits: its state is in the shared database, and a read here is fenced, so it
   * sees the events too.
   */
  private async writeSharedBatch(
    client: pg.PoolClient,
    batch: readonly QueuedWrite[],
    answeredAtCommit: (() => void)[],
  ): Promise<NewChange[]> {
    const byWrite = new Map<SharedWrite<unknown, unknown>, QueuedShared[]>();
    for (const queued of batch) {
      if (!("shared" in queued)) continue;
      const group = byWrite.get(queued.shared) ?? [];
      group.push(queued);
      byWrite.set(queued.shared, group);
    }
    const changes: NewChange[] = [];
    for (const [write, group] of byWrite) {
      const outcomes = await write.writeBatch(
        client,
        group.map((queued) => queued.payload),
      );
      group.forEach((queued, i) => {
        const outcome = outcomes[i];
        if (outcome === undefined) throw new Error("a shared write returned fewer outcomes than payloads");
        // A change per write, as every other write makes: compaction counts changes, so a snapshot
        // comes after as many records as before, and a new replica replays at most that many.
        // The origin tells this replica it made them (it counts them in its metrics).
        const { tenantId, origin } = queued;
        if (outcome.ok)
          for (const { kind, payload } of outcome.changes ?? [])
            changes.push({ kind, tenantId, payload, origin });
        if (outcome.ok && outcome.events.length > 0)
          changes.push({ kind: EVENTS_KIND, tenantId, payload: { events: outcome.events } as never, origin });
        answeredAtCommit.push(() => queued.settle(outcome.ok ? { ok: true, value: outcome.value } : outcome));
      });
    }
    return changes;
  }

  private failAll(batch: readonly QueuedWrite[], error: WayfindError): void {
    for (const queued of batch) {
      const { origin } = queued;
      if (!this.waiting.has(origin)) continue;
      this.waiting.delete(origin);
      queued.settle({ ok: false, error });
    }
  }
}

export function connectPool(postgres: PostgresConfig, max: number, onError: (error: Error) => void): pg.Pool {
  const pool = new pg.Pool({
    ...connectionOf(postgres),
    max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // An idle client's error (the server restarted) must not crash the process; the next query reconnects.
  pool.on("error", onError);
  return pool;
}

/**
 * How this process connects: named in pg_stat_activity (`wayfind@host:pid`), so an operator sees which
 * replica holds which connection and lease.
 */
function connectionOf(postgres: PostgresConfig): pg.ClientConfig {
  return {
    connectionString: postgres.url,
    application_name: `wayfind@${hostname()}:${process.pid}`.slice(0, 63),
  };
}

function applyContext(change: Change): ApplyContext {
  return { atMs: change.committedAt.getTime() };
}

function unavailable(why: string): WayfindError {
  return new WayfindError(
    "unavailable",
    `${why}; retry the call (a usage record retried with the same idempotency key counts once)`,
  );
}

/**
 * Ties the SQLite copy to the PostgreSQL database it follows, refusing a copy of another database or a
 * standalone server's file: their rows did not come from this log, so applying it would mix states.
 */
function claimCopy(options: ReplicaOptions, clusterId: string): void {
  const { db } = options;
  const claimed = db.prepare<[], { id: string }>("SELECT id FROM replication_cluster").get()?.id;
  if (claimed === clusterId) return;
  const dataFile = db.name;
  if (claimed !== undefined) {
    throw new WayfindError(
      "failed_precondition",
      `${dataFile} is the copy of another PostgreSQL database (${claimed}, this one is ${clusterId}); ` +
        "give this replica an empty data dir, or point it at the database it was started with",
    );
  }
  if (options.holdsStandaloneState()) {
    throw new WayfindError(
      "failed_precondition",
      `${dataFile} holds events or usage recorded by a server that ran without PostgreSQL; a replica's ` +
        "copy is built from the shared database, so give this replica an empty data dir",
    );
  }
  db.prepare("INSERT INTO replication_cluster (id) VALUES (?)").run(clusterId);
}
