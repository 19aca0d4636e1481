import { randomUUID } from "node:crypto";
import type pg from "pg";
import { ChangeLog } from "./change-log.ts";
import { connectPool, type PostgresConfig } from "./replica.ts";
import type { ReplicatedWrite, StateWriter } from "./writes.ts";

/**
 * How a process that is not a replica (the CLI) changes a fleet's state: each write is appended to
 * the shared log, and every replica applies it as it follows the log, the copy in this server's data
 * folder included. Nothing is applied here, so a write answers nothing: use it only for writes whose
 * answer is void.
 */
export class LogAppender implements StateWriter {
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
      { kind: write.kind, tenantId, payload: payload as never, origin: `cli/${randomUUID()}` },
    ]);
    this.appended.push(...seqs);
    return undefined as R;
  }

  /** Nothing is applied here, so no read here is ever fenced. */
  async fence(): Promise<boolean> {
    return false;
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
