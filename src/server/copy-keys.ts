import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import type { KeyRow } from "../auth/api-keys.ts";
import { SharedKeyRecords } from "../auth/index.ts";
import type { Db } from "../database/sqlite.ts";
import { LogAppender } from "../replication/log-appender.ts";
import type { PostgresConfig } from "../replication/replica.ts";

/**
 * Set in a replica's copy once its API keys are the fleet's: every row of its `api_keys` then came
 * from the shared log. A copy without it was kept by a wayfind whose created keys stayed in one data
 * folder (an older wayfind); its keys are shared before the copy is used.
 */
const KEYS_SHARED = "keys_shared";

/** Marks a replica's copy (claimed, about to follow the log) as holding the fleet's keys only. */
export function markKeysShared(db: Db): void {
  db.prepare("INSERT OR IGNORE INTO replication_state (key, value) VALUES (?, 1)").run(KEYS_SHARED);
}

interface LocalKeys {
  /** The PostgreSQL database (wayfind_cluster id) the copy follows; undefined = none yet. */
  readonly clusterId: string | undefined;
  readonly rows: KeyRow[];
}

/**
 * The keys a replica's copy holds of its own (created on that replica by an older wayfind), or
 * undefined when there is nothing to share: no file, keys shared already, or a file that is not a
 * copy of a fleet (a standalone server's, with events or usage: the replica refuses it later).
 */
function localKeys(file: string): LocalKeys | undefined {
  if (!existsSync(file)) return undefined;
  const db = new Database(file, { fileMustExist: true });
  try {
    const table = (name: string) =>
      db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
    if (!table("replication_state") || !table("api_keys")) return undefined;
    const shared = db.prepare("SELECT 1 FROM replication_state WHERE key = ?").get(KEYS_SHARED);
    if (shared !== undefined) return undefined;
    const clusterId = db.prepare<[], { id: string }>("SELECT id FROM replication_cluster").get()?.id;
    const standalone =
      db.prepare("SELECT 1 FROM events UNION ALL SELECT 1 FROM usage_records LIMIT 1").get() !== undefined;
    if (clusterId === undefined && standalone) return undefined;
    const rows = db.prepare<[], KeyRow>("SELECT * FROM api_keys ORDER BY created_at_ms").all();
    return rows.length === 0 ? undefined : { clusterId, rows };
  } finally {
    db.close();
  }
}

/**
 * Before a replica's copy is prepared: keys created on this replica while keys stayed in one data
 * folder become the fleet's (the same secrets, ids and times), then leave the copy, which from now on
 * holds only what the log brings back. A key whose id its tenant has in the fleet already stays out,
 * logged: the fleet's is kept. Run again after a crash midway, it adds nothing twice.
 */
export async function shareLocalKeys(
  postgres: PostgresConfig,
  file: string,
  where: string,
  logger: Logger,
): Promise<void> {
  const local = localKeys(file);
  if (local === undefined) return;
  const appender = await LogAppender.open(postgres);
  try {
    // Another database's copy: left alone, the replica refuses it.
    if (local.clusterId !== undefined && local.clusterId !== (await appender.clusterId())) return;
    const records = await SharedKeyRecords.open(appender, where);
    const taken = new Set((await records.lift(local.rows)).map((row) => `${row.tenant_id}\u0000${row.id}`));
    for (const row of local.rows)
      if (!taken.has(`${row.tenant_id}\u0000${row.id}`))
        logger.warn(
          { key: row.id, tenant: row.tenant_id },
          "an API key created on this replica was not shared: its tenant has a key of this id in the fleet (kept); create it again under another id",
        );
    logger.info(
      { keys: taken.size, database: where },
      "API keys created on this replica now belong to the fleet",
    );
  } finally {
    await appender.close();
  }
  const db = new Database(file, { fileMustExist: true });
  try {
    db.transaction(() => {
      db.exec("DELETE FROM api_keys");
      markKeysShared(db);
    })();
  } finally {
    db.close();
  }
}
