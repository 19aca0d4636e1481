import pg from "pg";
import type { JsonValue } from "../json.ts";

/**
 * The ordered change log replicas share on PostgreSQL (docs/replicas.md): every replicated write is a
 * change in it, and every replica applies the changes in order (src/replication/follower.ts).
 */

/** One change as a replica applies it. */
export interface Change {
  /** Position in the log: 1, 2, 3, … with no gaps, in commit order. */
  readonly seq: number;
  readonly kind: string;
  /** The tenant it belongs to; "" = global. */
  readonly tenantId: string;
  readonly payload: JsonValue;
  readonly committedAt: Date;
  /** Who appended it and which of its writes it is (`<replica id>/<n>`), so the writer gets its outcome; "" = none. */
  readonly origin: string;
}

export type NewChange = Pick<Change, "kind" | "tenantId" | "payload"> & { readonly origin?: string };

/** A versioned schema change of the PostgreSQL side, like the SQLite migrations (src/database/sqlite.ts). */
export interface PostgresMigration {
  readonly id: string;
  readonly up: string;
}

export const CHANGE_LOG_MIGRATIONS: readonly PostgresMigration[] = [
  {
    id: "replication/001-changes",
    up: `CREATE TABLE wayfind_changes (
           seq bigint PRIMARY KEY,
           kind text NOT NULL,
           tenant_id text NOT NULL DEFAULT '',
           payload jsonb NOT NULL,
           committed_at timestamptz NOT NULL DEFAULT now()
         )`,
  },
  {
    id: "replication/002-origin-and-cluster",
    up: `ALTER TABLE wayfind_changes ADD COLUMN origin text NOT NULL DEFAULT '';
         CREATE TABLE wayfind_cluster (id uuid PRIMARY KEY);
         INSERT INTO wayfind_cluster (id) VALUES (gen_random_uuid())`,
  },
  {
    id: "replication/003-snapshots-and-replicas",
    // Log compaction (docs/replicas.md "Compaction"): snapshots of a replica's copy, each stored whole
    // or not at all (one transaction), and each live replica's applied seq, which compaction respects.
    up: `CREATE TABLE wayfind_snapshots (
           seq bigint PRIMARY KEY,
           bytes bigint NOT NULL,
           sha256 text NOT NULL,
           created_by text NOT NULL,
           created_at timestamptz NOT NULL DEFAULT now()
         );
         CREATE TABLE wayfind_snapshot_chunks (
           seq bigint NOT NULL REFERENCES wayfind_snapshots (seq) ON DELETE CASCADE,
           n integer NOT NULL,
           data bytea NOT NULL,
           PRIMARY KEY (seq, n)
         );
         CREATE TABLE wayfind_replicas (
           id text PRIMARY KEY,
           applied_seq bigint NOT NULL,
           seen_at timestamptz NOT NULL
         )`,
  },
];

/** The NOTIFY channel: a wake-up only; followers read the log itself, so a lost one loses nothing. */
const CHANGES_CHANNEL = "wayfind_changes";

// Advisory lock keys (one namespace per purpose, arbitrary constants).
const APPEND_LOCK = 0x77617966; // "wayf": appends, one at a time, so commit order is seq order
const MIGRATE_LOCK = 0x77617967;

/** Applies the migrations not applied yet, one transaction each, one replica at a time. */
export async function migratePostgres(
  pool: pg.Pool,
  migrations: readonly PostgresMigration[],
): Promise<string[]> {
  return withClient(pool, async (client) => {
    try {
      await client.query("SELECT pg_advisory_lock($1)", [MIGRATE_LOCK]);
      await client.query(
        "CREATE TABLE IF NOT EXISTS wayfind_schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
      );
      const { rows } = await client.query<{ id: string }>("SELECT id FROM wayfind_schema_migrations");
      const applied = new Set(rows.map((row) => row.id));
      const newlyApplied: string[] = [];
      for (const migration of migrations) {
        if (applied.has(migration.id)) continue;
        await inTransaction(client, async () => {
          await client.query(migration.up);
          await client.query("INSERT INTO wayfind_schema_migrations (id) VALUES ($1)", [migration.id]);
        });
        newlyApplied.push(migration.id);
      }
      return newlyApplied;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATE_LOCK]).catch(() => undefined);
    }
  });
}

/** Holds every append until `client`'s transaction ends: seq order is commit order under it. */
export async function lockAppends(client: pg.PoolClient): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock($1)", [APPEND_LOCK]);
}

/**
 * Runs `work` with a client of `pool`, released after (and closed when its connection failed). The
 * pool listens for errors of idle clients only: a checked-out one whose connection drops between two
 * queries would emit an unhandled 'error' and end the process; here the next query fails instead.
 */
export async function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on("error", onError);
  try {
    return await work(client);
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}

/** Runs `work` in a transaction on `client`: committed when it resolves, rolled back when it throws. */
export async function inTransaction<T>(client: pg.PoolClient, work: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const result = await work();
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

interface ChangeRow {
  seq: string;
  kind: string;
  tenant_id: string;
  payload: JsonValue;
  committed_at: Date;
  origin: string;
}

export class ChangeLog {
  private constructor(private readonly pool: pg.Pool) {}

  /** The log on `pool`'s database, its tables created or upgraded first. */
  static async open(pool: pg.Pool): Promise<ChangeLog> {
    await migratePostgres(pool, CHANGE_LOG_MIGRATIONS);
    return new ChangeLog(pool);
  }

  /**
   * Appends `changes` in one transaction and returns their seqs. `within` runs first in the same
   * transaction: writes to shared tables, returning the changes that report them (appended after
   * `changes`), so a change is in the log exactly when its state is committed. Appends take a transaction-scoped advisory lock just
   * before numbering: a sequence numbers rows at insert, not at commit, so a reader could see seq 12
   * before 11 commits and skip 11; under the lock seq order is commit order.
   */
  async append(
    changes: readonly NewChange[],
    within?: (client: pg.PoolClient) => Promise<readonly NewChange[]>,
  ): Promise<number[]> {
    if (changes.length === 0 && within === undefined) return [];
    return withClient(this.pool, (client) =>
      inTransaction(client, async () => {
        const all = [...changes, ...((await within?.(client)) ?? [])];
        if (all.length === 0) return [];
        await lockAppends(client);
        // One parameter per value, not arrays: the driver escapes each array element in JavaScript,
        // which for a registration of thousands of tools held the event loop for a quarter second.
        const values = all.map(
          (_, i) => `(${i + 1}, $${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}::jsonb, $${4 * i + 4})`,
        );
        const { rows } = await client.query<{ seq: string }>(
          // clock_timestamp(), read under the lock, keeps change times in seq order (now() is the
          // transaction's start, before the lock). The wake-up goes in the same round trip.
          `WITH appended AS (
             INSERT INTO wayfind_changes (seq, kind, tenant_id, payload, origin, committed_at)
             SELECT (SELECT coalesce(max(seq), 0) FROM wayfind_changes) + c.ord, c.kind, c.tenant_id,
               c.payload, c.origin, clock_timestamp()
             FROM (VALUES ${values.join(", ")}) AS c(ord, kind, tenant_id, payload, origin)
             RETURNING seq),
           woken AS (SELECT pg_notify('${CHANGES_CHANNEL}', max(seq)::text) FROM appended)
           SELECT seq FROM appended, woken`,
          all.flatMap((c) => [c.kind, c.tenantId, jsonForPostgres(c.payload), c.origin ?? ""]),
        );
        return rows.map((row) => Number(row.seq)).sort((a, b) => a - b);
      }),
    );
  }

  /** Up to `limit` changes after `seq`, in order. */
  async after(seq: number, limit: number): Promise<Change[]> {
    const { rows } = await this.pool.query<ChangeRow>(
      "SELECT seq, kind, tenant_id, payload, committed_at, origin FROM wayfind_changes WHERE seq > $1 ORDER BY seq LIMIT $2",
      [seq, limit],
    );
    return rows.map((row) => ({
      seq: Number(row.seq),
      kind: row.kind,
      tenantId: row.tenant_id,
      payload: row.payload,
      committedAt: row.committed_at,
      origin: row.origin,
    }));
  }

  /** This PostgreSQL database's identity: a replica's local copy belongs to exactly one. */
  async clusterId(): Promise<string> {
    const { rows } = await this.pool.query<{ id: string }>("SELECT id FROM wayfind_cluster");
    const id = rows[0]?.id;
    if (id === undefined) throw new Error("wayfind_cluster is empty: the replication migrations did not run");
    return id;
  }

  /** The seq of the oldest change still in the log (0 for an empty log); older ones were compacted. */
  async oldest(): Promise<number> {
    const { rows } = await this.pool.query<{ oldest: string }>(
      "SELECT coalesce(min(seq), 0) AS oldest FROM wayfind_changes",
    );
    return Number(rows[0]?.oldest ?? 0);
  }

  /** Records that replica `replicaId` has applied the log through `seq` (compaction keeps what it still needs). */
  async reportApplied(replicaId: string, seq: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO wayfind_replicas (id, applied_seq, seen_at) VALUES ($1, $2, clock_timestamp())
       ON CONFLICT (id) DO UPDATE SET applied_seq = excluded.applied_seq, seen_at = excluded.seen_at`,
      [replicaId, seq],
    );
  }

  /**
   * Deletes the changes every copy can do without: those a snapshot holds (seq <= `snapshotSeq`) and
   * every replica heard from within `replicaTimeoutMs` has applied. The newest change always stays,
   * since appends number from it. Replicas not heard from for that long are forgotten: one that comes
   * back behind the log restores its copy from the snapshot. Returns the seq compacted through.
   */
  async compact(
    snapshotSeq: number,
    replicaTimeoutMs: number,
  ): Promise<{ through: number; deleted: number }> {
    const timeout = `${Math.max(0, Math.round(replicaTimeoutMs))} milliseconds`;
    await this.pool.query("DELETE FROM wayfind_replicas WHERE seen_at < clock_timestamp() - $1::interval", [
      timeout,
    ]);
    // least() skips NULLs: no replica rows, or an empty log, leave the other bounds.
    const { rows } = await this.pool.query<{ through: string | null }>(
      `SELECT least($1::bigint, (SELECT min(applied_seq) FROM wayfind_replicas),
         (SELECT max(seq) - 1 FROM wayfind_changes)) AS through`,
      [snapshotSeq],
    );
    const through = Math.max(0, Number(rows[0]?.through ?? 0));
    const deleted = await this.pool.query("DELETE FROM wayfind_changes WHERE seq <= $1", [through]);
    return { through, deleted: deleted.rowCount ?? 0 };
  }

  /** The seq of the last committed change (0 for an empty log). */
  async head(): Promise<number> {
    const { rows } = await this.pool.query<{ head: string }>(
      "SELECT coalesce(max(seq), 0) AS head FROM wayfind_changes",
    );
    return Number(rows[0]?.head ?? 0);
  }
}

/**
 * Calls `onWake` whenever a change is committed anywhere (LISTEN on a connection of its own), and
 * once after every (re)connection, since notifications sent while it was away are gone. Reconnects
 * after `retryMs` when the connection drops. Returns the function that stops listening.
 */
export async function listenForChanges(
  config: pg.ClientConfig,
  onWake: () => void,
  options: { retryMs?: number; onError?: (error: Error) => void } = {},
): Promise<() => Promise<void>> {
  const retryMs = options.retryMs ?? 1_000;
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client(config);
    next.on("notification", () => onWake());
    next.on("error", (error) => {
      options.onError?.(error);
      reconnectLater(next);
    });
    next.on("end", () => reconnectLater(next));
    await next.connect();
    await next.query(`LISTEN ${CHANGES_CHANNEL}`);
    if (stopped) {
      await next.end();
      return;
    }
    client = next;
    onWake();
  };
  const reconnectLater = (dropped: pg.Client) => {
    if (stopped || client !== dropped) return;
    client = undefined;
    retry = setTimeout(function attempt() {
      connect().catch((error: Error) => {
        options.onError?.(error);
        if (!stopped) retry = setTimeout(attempt, retryMs);
      });
    }, retryMs);
  };

  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => undefined);
  };
}

/**
 * `payload` as JSON PostgreSQL takes: jsonb cannot hold U+0000, which callers may send in any text
 * (a search query, a note), so it is stored as U+FFFD. Every replica, the writer included, applies
 * the change as read back from the log, so all apply the same text. An escaped backslash before
 * "u0000" ("\\u0000" in the JSON) is text, not the character, and is left alone.
 */
function jsonForPostgres(payload: JsonValue): string {
  return JSON.stringify(payload).replace(/(?<!\\)((?:\\\\)*)\\u0000/g, "$1\\ufffd");
}
