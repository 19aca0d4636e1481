import type pg from "pg";
import type { Db } from "../database/sqlite.ts";
import { writeTransaction } from "../database/transaction.ts";
import type { WayfindError } from "../errors.ts";
import type { NewEvent } from "../events/index.ts";
import type { JsonValue } from "../json.ts";
import type { PostgresMigration } from "./change-log.ts";

/** What a change is applied with besides its payload: the same on every replica. */
export interface ApplyContext {
  /** The change's time in epoch ms: its commit to the change log, or now on SQLite alone. */
  readonly atMs: number;
}

/**
 * A kind of state change, written the same way whether one server owns its SQLite file or several
 * replicas share a PostgreSQL change log (docs/replicas.md). The caller validates and prepares the
 * payload (plain JSON: it is stored in the log); `apply` makes the change inside a write transaction
 * and must be deterministic in the payload, the context and the state before it, since every replica
 * runs it on its own copy. It refuses with a WayfindError (the same on every replica).
 */
export interface ReplicatedWrite<P, R> {
  /** Stored with each change; a replica that does not know a kind stops rather than skip it. */
  readonly kind: string;
  apply(payload: P, context: ApplyContext): R;
}

/** Runs writes and fences reads; `LocalWriter` on SQLite alone, `Replica` with PostgreSQL. */
export interface StateWriter {
  /** Applies `payload` as `write` (on every replica) and resolves with this replica's outcome. */
  write<P, R>(write: ReplicatedWrite<P, R>, payload: P, tenantId?: string): Promise<R>;
  /**
   * Resolves once this replica has applied every change committed anywhere before the call, so a
   * read after it sees every write acknowledged before it (read-your-writes across replicas): true.
   * False when that could not be made sure (the shared database is away): the read is stale.
   */
  fence(): Promise<boolean>;
}

/** SQLite alone: a write is one local transaction, there is nothing to wait for before a read. */
export class LocalWriter implements StateWriter {
  constructor(
    private readonly db: Db,
    /** The clock changes are applied at (epoch ms); injectable for tests. */
    private readonly now: () => number = Date.now,
  ) {}

  /** Done when this returns: the transaction runs before the first await (a caller need not wait). */
  async write<P, R>(write: ReplicatedWrite<P, R>, payload: P): Promise<R> {
    return writeTransaction(this.db, () => write.apply(payload, { atMs: this.now() }));
  }

  async fence(): Promise<boolean> {
    return true;
  }
}

/** The change kind that carries events into every replica's event log (src/replication/events.ts). */
export const EVENTS_KIND = "events/report";

/**
 * A write to tables of the shared PostgreSQL database itself, which replicas do not copy (the usage
 * ledger, docs/replicas.md). It runs in the transaction that appends to the change log, so the events
 * it reports are in the log exactly when its rows are committed, and every replica stores them.
 */
export interface SharedWrite<P, R> {
  /**
   * Writes every payload queued together, in order, inside the append's transaction (before the log's
   * lock); returns each one's outcome. A refusal (a WayfindError) is that payload's answer; anything
   * thrown fails the whole batch, rolled back, as unavailable.
   */
  writeBatch(client: pg.PoolClient, payloads: readonly P[]): Promise<SharedOutcome<R>[]>;
}

export type SharedOutcome<R> =
  | {
      readonly ok: true;
      readonly value: R;
      readonly events: readonly NewEvent[];
      /**
       * Changes every replica applies to its copy, committed with the rows (the API keys: the shared
       * table is the record, each copy follows it for lookups that never wait for the database).
       */
      readonly changes?: readonly SharedChange[];
    }
  | { readonly ok: false; readonly error: WayfindError };

/** A change a shared write makes for every replica's copy: its kind (a ReplicatedWrite's) and payload. */
interface SharedChange {
  readonly kind: string;
  readonly payload: JsonValue;
}

/** What a replica offers state kept only in the shared database (see SharedWrite). */
export interface SharedDatabase {
  /** Applies the migrations not applied yet (one at a time across the fleet). */
  migrate(migrations: readonly PostgresMigration[]): Promise<void>;
  /**
   * Writes `payload` with others queued meanwhile (group commit); resolves with its value once it is
   * committed (the events it reported reach this replica's log with the next catch-up; reads here are
   * fenced, so they see them).
   */
  writeShared<P, R>(write: SharedWrite<P, R>, payload: P, tenantId: string): Promise<R>;
  /**
   * One statement ($1… parameters); the database away is an unavailable error. `prepared`: a
   * statement of a fixed text run often, prepared once per connection (PostgreSQL then plans it once
   * for every call when that plan is as good as one for the call's values).
   */
  query<Row>(sql: string, params: readonly unknown[], options?: { prepared?: boolean }): Promise<Row[]>;
  /** `work` in one transaction on one connection. */
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}
