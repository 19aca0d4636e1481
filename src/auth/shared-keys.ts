import type pg from "pg";
import type { PostgresMigration } from "../replication/change-log.ts";
import type { SharedDatabase, SharedOutcome, SharedWrite } from "../replication/writes.ts";
import { KEYS_CHANGE_KIND, type KeyRow, type KeysChange } from "./api-keys.ts";
import type { KeyRecords, NewKeyRow } from "./key-book.ts";

/**
 * The fleet's created API keys (docs/replicas.md "API keys"): one table of the shared PostgreSQL is
 * the record, written in the change log's append transaction together with the change that carries
 * the rows to every replica's copy, where keys are looked up on each call. So a key created through
 * one replica (or `wayfind keys create` against the fleet) is in every copy in log order, two
 * replicas creating one id at once meet at the table's primary key, and only SHA-256s are stored.
 */
export const KEYS_POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    id: "auth/001-api-keys",
    up: `CREATE TABLE wayfind_api_keys (
           tenant_id text NOT NULL,
           id text NOT NULL,
           key_sha256 text NOT NULL UNIQUE,
           roles_json text NOT NULL,
           entitlements_json text NOT NULL,
           projects_json text NOT NULL,
           created_at_ms bigint NOT NULL,
           expires_at_ms bigint,
           revoked_at_ms bigint,
           PRIMARY KEY (tenant_id, id)
         )`,
  },
];

/** One write to the fleet's keys, as the change log's append transaction runs it. */
type KeyWrite =
  | { readonly op: "insert"; readonly row: NewKeyRow; readonly purgeBeforeMs: number }
  | { readonly op: "revoke"; readonly tenant: string; readonly id: string }
  | { readonly op: "purge"; readonly purgeBeforeMs: number }
  /** Keys a replica's copy held from before keys were shared, with their own times (see liftKeys). */
  | { readonly op: "lift"; readonly rows: readonly KeyRow[] };

type KeyWriteResult = KeyRow | "already" | "missing" | undefined | readonly KeyRow[];

/** Now on PostgreSQL's clock, in epoch ms: one clock for the fleet's key times. */
const NOW_MS = "floor(extract(epoch from now()) * 1000)::bigint";
const COLUMNS =
  "id, key_sha256, tenant_id, roles_json, entitlements_json, projects_json, created_at_ms, expires_at_ms, revoked_at_ms";

interface PostgresKeyRow extends Omit<KeyRow, "created_at_ms" | "expires_at_ms" | "revoked_at_ms"> {
  created_at_ms: string;
  expires_at_ms: string | null;
  revoked_at_ms: string | null;
}

/** A row as read from PostgreSQL (bigints arrive as text). */
function fromPostgres(row: PostgresKeyRow): KeyRow {
  const ms = (value: string | null) => (value === null ? null : Number(value));
  return {
    ...row,
    created_at_ms: Number(row.created_at_ms),
    expires_at_ms: ms(row.expires_at_ms),
    revoked_at_ms: ms(row.revoked_at_ms),
  };
}

/**
 * Deletes the keys revoked or expired before the cutoff, skipping rows another write holds (it never
 * waits, so two appends purging at once cannot deadlock); returns which.
 */
async function purge(client: pg.PoolClient, beforeMs: number): Promise<KeysChange["drop"]> {
  const { rows } = await client.query<{ tenant_id: string; id: string }>(
    `DELETE FROM wayfind_api_keys WHERE (tenant_id, id) IN (
       SELECT tenant_id, id FROM wayfind_api_keys WHERE revoked_at_ms < $1 OR expires_at_ms < $1
       FOR UPDATE SKIP LOCKED)
     RETURNING tenant_id, id`,
    [beforeMs],
  );
  return rows;
}

async function runKeyWrite(
  client: pg.PoolClient,
  write: KeyWrite,
): Promise<{ value: KeyWriteResult; change: KeysChange }> {
  switch (write.op) {
    case "insert": {
      const drop = await purge(client, write.purgeBeforeMs);
      const { row } = write;
      const { rows } = await client.query<PostgresKeyRow>(
        `INSERT INTO wayfind_api_keys (${COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, ${NOW_MS}, $7, NULL)
         ON CONFLICT DO NOTHING RETURNING ${COLUMNS}`,
        [
          row.id,
          row.key_sha256,
          row.tenant_id,
          row.roles_json,
          row.entitlements_json,
          row.projects_json,
          row.expires_at_ms,
        ],
      );
      const inserted = rows[0] && fromPostgres(rows[0]);
      return { value: inserted, change: { put: inserted ? [inserted] : [], drop } };
    }
    case "revoke": {
      const { rows } = await client.query<PostgresKeyRow>(
        `UPDATE wayfind_api_keys SET revoked_at_ms = ${NOW_MS}
         WHERE tenant_id = $1 AND id = $2 AND revoked_at_ms IS NULL RETURNING ${COLUMNS}`,
        [write.tenant, write.id],
      );
      const revoked = rows[0] && fromPostgres(rows[0]);
      if (revoked) return { value: revoked, change: { put: [revoked], drop: [] } };
      const existing = await client.query("SELECT 1 FROM wayfind_api_keys WHERE tenant_id = $1 AND id = $2", [
        write.tenant,
        write.id,
      ]);
      return { value: existing.rowCount ? "already" : "missing", change: { put: [], drop: [] } };
    }
    case "purge":
      return { value: undefined, change: { put: [], drop: await purge(client, write.purgeBeforeMs) } };
    case "lift": {
      const taken = await insertKeyRows(client, write.rows);
      return { value: taken, change: { put: taken, drop: [] } };
    }
  }
}

/**
 * Inserts keys with their own ids, hashes and times, one at a time (a few per data folder, once);
 * returns those inserted (a tenant's id taken already keeps the fleet's key). The table must exist.
 */
export async function insertKeyRows(client: pg.PoolClient, keys: readonly KeyRow[]): Promise<KeyRow[]> {
  const taken: KeyRow[] = [];
  for (const row of keys) {
    const { rows } = await client.query<PostgresKeyRow>(
      `INSERT INTO wayfind_api_keys (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT DO NOTHING RETURNING ${COLUMNS}`,
      [
        row.id,
        row.key_sha256,
        row.tenant_id,
        row.roles_json,
        row.entitlements_json,
        row.projects_json,
        row.created_at_ms,
        row.expires_at_ms,
        row.revoked_at_ms,
      ],
    );
    if (rows[0]) taken.push(fromPostgres(rows[0]));
  }
  return taken;
}

/** Every key write, run in the append's transaction, each with the change its rows make. */
const keyWrites: SharedWrite<KeyWrite, KeyWriteResult> = {
  async writeBatch(client, payloads) {
    const outcomes: SharedOutcome<KeyWriteResult>[] = [];
    for (const write of payloads) {
      const { value, change } = await runKeyWrite(client, write);
      const moved = change.put.length + change.drop.length > 0;
      outcomes.push({
        ok: true,
        value,
        events: [],
        changes: moved ? [{ kind: KEYS_CHANGE_KIND, payload: change as never }] : [],
      });
    }
    return outcomes;
  },
};

/** The fleet's keys on the shared database (a replica's, or the CLI's connection to it). */
export class SharedKeyRecords implements KeyRecords {
  private constructor(
    private readonly shared: SharedDatabase,
    readonly where: string,
  ) {}

  /** The records on `shared`, its table created first; `where` names the database for people. */
  static async open(shared: SharedDatabase, where: string): Promise<SharedKeyRecords> {
    await shared.migrate(KEYS_POSTGRES_MIGRATIONS);
    return new SharedKeyRecords(shared, where);
  }

  async list(purgeBeforeMs: number): Promise<KeyRow[]> {
    const expired = await this.shared.query(
      "SELECT 1 FROM wayfind_api_keys WHERE revoked_at_ms < $1 OR expires_at_ms < $1 LIMIT 1",
      [purgeBeforeMs],
    );
    if (expired.length > 0) await this.write({ op: "purge", purgeBeforeMs });
    return this.select("ORDER BY created_at_ms, tenant_id, id", []);
  }

  async get(tenant: string, id: string): Promise<KeyRow | undefined> {
    return (await this.select("WHERE tenant_id = $1 AND id = $2", [tenant, id]))[0];
  }

  withId(id: string): Promise<KeyRow[]> {
    return this.select("WHERE id = $1 ORDER BY tenant_id", [id]);
  }

  async insert(row: NewKeyRow, purgeBeforeMs: number): Promise<KeyRow | undefined> {
    return (await this.write({ op: "insert", row, purgeBeforeMs })) as KeyRow | undefined;
  }

  async revoke(tenant: string, id: string): Promise<"revoked" | "already" | "missing"> {
    const outcome = await this.write({ op: "revoke", tenant, id });
    return typeof outcome === "string" ? outcome : "revoked";
  }

  /** Adds keys created before keys were shared, keeping their times; returns those taken (an id free). */
  async lift(rows: readonly KeyRow[]): Promise<readonly KeyRow[]> {
    return (await this.write({ op: "lift", rows })) as readonly KeyRow[];
  }

  private write(write: KeyWrite): Promise<KeyWriteResult> {
    const tenant = "tenant" in write ? write.tenant : "row" in write ? write.row.tenant_id : "";
    return this.shared.writeShared(keyWrites, write, tenant);
  }

  private async select(clauses: string, params: readonly unknown[]): Promise<KeyRow[]> {
    const rows = await this.shared.query<PostgresKeyRow>(
      `SELECT ${COLUMNS} FROM wayfind_api_keys ${clauses}`,
      params,
    );
    return rows.map(fromPostgres);
  }
}
