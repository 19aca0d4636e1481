import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type pg from "pg";
import type { KeyRow } from "../auth/api-keys.ts";
import { insertKeyRows, KEYS_POSTGRES_MIGRATIONS } from "../auth/index.ts";
import { type Db, openDatabase } from "../database/sqlite.ts";
import { errorReason, WayfindError } from "../errors.ts";
import { adoptAsCopy } from "../replication/follower.ts";
import { LogAppender } from "../replication/log-appender.ts";
import type { PostgresConfig } from "../replication/replica.ts";
import { seedEmptyDatabase } from "../replication/seed.ts";
import { takeSnapshot } from "../replication/snapshots.ts";
import { copyUsageToPostgres } from "../usage/postgres-import.ts";
import { USAGE_POSTGRES_MIGRATIONS } from "../usage/postgres-schema.ts";
import { markKeysShared } from "./copy-keys.ts";
import { lockDataFolder } from "./data-lock.ts";
import { allMigrations } from "./migrations.ts";
import { redactedUrl } from "./storage.ts";

/** What a data folder held, by kind, as copied (rows). */
export interface CopiedState {
  /** Every source's (catalog files and MCP servers sync again on the replicas; the API's only live here). */
  readonly tools: number;
  readonly skillPacks: number;
  readonly activations: number;
  readonly apiKeys: number;
  readonly usageRecords: number;
  readonly events: number;
  readonly learnedRequests: number;
  /** The snapshot every new replica's copy starts from. */
  readonly snapshotBytes: number;
}

/** Tables whose rows are counted for the report, by what they hold. */
const COUNTED = {
  tools: "discovery_tools",
  skillPacks: "skill_packs",
  activations: "tool_activations",
  apiKeys: "api_keys",
  usageRecords: "usage_records",
  events: "events",
  learnedRequests: "learned_requests",
} as const;

/** The usage ledger's tables on SQLite: on PostgreSQL they are shared tables, not in the copies. */
const LOCAL_USAGE_TABLES = ["usage_records", "usage_daily", "usage_hourly", "usage_minutely"];

/**
 * Moves one server's state (its SQLite data folder) onto a new PostgreSQL database, so a fleet of
 * replicas starts from it: registered tools, skill packs, activations, API keys, learning, events
 * and the usage ledger, all or nothing. The data folder is read, never changed (the way back is to
 * serve it again without storage.postgres); the server must be stopped (its lock is taken).
 */
export async function copyToPostgres(dataDir: string, postgres: PostgresConfig): Promise<CopiedState> {
  const file = join(dataDir, "wayfind.db");
  if (!existsSync(file))
    throw new WayfindError(
      "not_found",
      `${dataDir} holds no wayfind.db: name the data folder of the server to copy (--data-dir)`,
    );
  const release = lockDataFolder(dataDir);
  removeLeftovers(dataDir);
  const work = `${file}${WORK_SUFFIX}${randomUUID()}`;
  const snapshot = `${work}.snapshot`;
  try {
    copyFile(file, work);
    // The copy, not the folder's file, is brought to this version's schema.
    const db = openDatabase(work, allMigrations);
    try {
      const claimed = db.prepare<[], { id: string }>("SELECT id FROM replication_cluster").get();
      if (claimed !== undefined)
        throw new WayfindError(
          "failed_precondition",
          `${file} is a replica's copy of a PostgreSQL database (${claimed.id}), not one server's state: nothing to move`,
        );
      const counts = countRows(db);
      const appender = await LogAppender.open(postgres).catch((error: unknown) => {
        throw new WayfindError(
          "unavailable",
          `connecting to ${redactedUrl(postgres.url)} failed (${errorReason(error)}); check the URL, that the server runs and accepts this user`,
        );
      });
      try {
        await appender.migrate([...KEYS_POSTGRES_MIGRATIONS, ...USAGE_POSTGRES_MIGRATIONS]);
        const clusterId = await appender.clusterId();
        const stored = await seedEmptyDatabase(appender, async (client) => {
          await fillSharedTables(db, client);
          for (const table of LOCAL_USAGE_TABLES) db.prepare(`DELETE FROM ${table}`).run();
          adoptAsCopy(db, clusterId, Date.now());
          markKeysShared(db);
          await takeSnapshot(work, snapshot);
          return snapshot;
        });
        return { ...counts, snapshotBytes: stored.bytes };
      } finally {
        await appender.close();
      }
    } finally {
      db.close();
    }
  } finally {
    for (const leftover of [work, snapshot])
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${leftover}${suffix}`, { force: true });
    release();
  }
}

/** The fleet's shared tables (keys, usage ledger) from the copy, refused when they hold anything. */
async function fillSharedTables(db: Db, client: pg.PoolClient): Promise<void> {
  const { rows } = await client.query<{ keys: boolean; usage: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM wayfind_api_keys) AS keys, EXISTS (SELECT 1 FROM wayfind_usage_keys) AS usage`,
  );
  if (rows[0]?.keys || rows[0]?.usage)
    throw new WayfindError(
      "failed_precondition",
      "the shared database already holds API keys or usage records: copy into a new, empty database",
    );
  await insertKeyRows(client, db.prepare<[], KeyRow>("SELECT * FROM api_keys ORDER BY created_at_ms").all());
  await copyUsageToPostgres(db, client);
}

/** Beside the data folder's file while a copy is made: removed after, and by the next run after a crash. */
const WORK_SUFFIX = ".copy-to-postgres-";

function removeLeftovers(dataDir: string): void {
  for (const name of readdirSync(dataDir))
    if (name.startsWith(`wayfind.db${WORK_SUFFIX}`)) rmSync(join(dataDir, name), { force: true });
}

/** A consistent copy of the data folder's database (its write-ahead log included). */
function copyFile(file: string, into: string): void {
  const source = new Database(file, { fileMustExist: true });
  try {
    source.prepare("VACUUM INTO ?").run(into);
  } finally {
    source.close();
  }
}

function countRows(db: Db): Omit<CopiedState, "snapshotBytes"> {
  const count = (table: string) =>
    db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()?.n ?? 0;
  return Object.fromEntries(Object.entries(COUNTED).map(([kind, table]) => [kind, count(table)])) as Omit<
    CopiedState,
    "snapshotBytes"
  >;
}
