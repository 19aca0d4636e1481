import { randomUUID } from "node:crypto";
import type pg from "pg";
import {
  ChangeLog,
  inTransaction,
  migratePostgres,
  type PostgresMigration,
  withClient,
} from "./change-log.ts";
import { connectPool, type PostgresConfig } from "./replica.ts";
import {
  EVENTS_KIND,
  type ReplicatedWrite,
  type SharedDatabase,
  type SharedOutcome,
  type SharedWrite,
  type StateWriter,
} from "./writes.ts";

/**
 * How a process that is not a replica (the CLI) changes a fleet's state: each write is appended to
 * the shared log, and every replica applies it as it follows the log, the copy in this server's data
 * folder included. Nothing is applied here, so a write answers nothing: use it only for writes whose
 * answer is void. A shared write (the API keys) is answered from the shared database's own tables,
 * as on a replica.
 */
export class LogAppender implements StateWriter, SharedDatabase {
  /** The log positions of the changes appended so far. */
  readonly appended: number[] = [];

  private constructor(
    private readonly pool: pg.Pool,
    private readonly log: ChangeLog,
  ) {}

  static async open(postgres: PostgresConfig): Promise<LogAppender> {
    const pool = connectPool(postgres, 1, () => {});
    try {
      return new LogAppender(pool, await ChangeLog.open(pool));
    } catch (error) {
      await pool.end();
      throw error;
    }
  }

  async write<P, R>(write: ReplicatedWrite<P, R>, payload: P, tenantId = ""): Promise<R> {
    const seqs = await this.log.append([
      { kind: write.kind, tenantId, payload: payload as never, origin: this.origin() },
    ]);
    this.appended.push(...seqs);
    return undefined as R;
  }

  /** The shared database's identity (a replica's copy belongs to exactly one). */
  clusterId(): Promise<string> {
    return this.log.clusterId();
  }

  /** Nothing is applied here, so no read here is ever fenced. */
  async fence(): Promise<boolean> {
    return false;
  }

  async migrate(migrations: readonly PostgresMigration[]): Promise<void> {
    await migratePostgres(this.pool, migrations);
  }

  async writeShared<P, R>(write: SharedWrite<P, R>, payload: P, tenantId: string): Promise<R> {
    let outcome: SharedOutcome<R> | undefined;
    const origin = this.origin();
    const seqs = await this.log.append([], async (client) => {
      [outcome] = await write.writeBatch(client, [payload]);
      if (outcome === undefined) throw new Error("a shared write returned no outcome");
      if (!outcome.ok) return [];
      const events =
        outcome.events.length > 0 ? [{ kind: EVENTS_KIND, payload: { events: outcome.events } }] : [];
      return [...(outcome.changes ?? []), ...events].map(({ kind, payload }) => ({
        kind,
        tenantId,
        payload: payload as never,
        origin,
      }));
    });
    this.appended.push(...seqs);
    if (outcome === undefined) throw new Error("a shared write returned no outcome");
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  async query<Row>(sql: string, params: readonly unknown[]): Promise<Row[]> {
    return (await this.pool.query({ text: sql, values: params as unknown[] })).rows as Row[];
  }

  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return withClient(this.pool, (client) => inTransaction(client, () => work(client)));
  }

  close(): Promise<void> {
    return this.pool.end();
  }

  private origin(): string {
    return `cli/${randomUUID()}`;
  }
}
