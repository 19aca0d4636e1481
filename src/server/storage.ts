import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { Logger } from "pino";
import { ConfigError, type WayfindConfig } from "../config/index.ts";
import { WalCheckpointer } from "../database/checkpointer.ts";
import { CACHE_KIB, type Db, openDatabase, setCacheSize } from "../database/sqlite.ts";
import { errorReason, WayfindError } from "../errors.ts";
import { CopyBehindLog } from "../replication/follower.ts";
import { Replica } from "../replication/replica.ts";
import { markKeysShared, shareLocalKeys } from "./copy-keys.ts";
import { lockDataFolder } from "./data-lock.ts";
import { allMigrations } from "./migrations.ts";

/** The server's state on disk: its SQLite file (the data folder held), and the shared database if a replica. */
export interface Storage {
  readonly db: Db;
  /** Set when the state is shared on PostgreSQL (storage.postgres): this server is one replica. */
  readonly replica: Replica | undefined;
  /** Whether a trivial query answers: the database file is open and readable. */
  reachable(): boolean;
  /** Closes the database (after the checkpoint worker's last checkpoint) and frees the data folder. */
  close(): Promise<void>;
}

/**
 * Holds the data folder, opens (a replica: first prepares) its SQLite copy, and connects to the
 * shared database when there is one. A failure closes whatever was opened, and says what to fix.
 */
export async function openStorage(
  config: WayfindConfig,
  logger: Logger,
  onReachability: (reachable: boolean) => void,
): Promise<Storage> {
  const dataFile = join(config.server.dataDir, "wayfind.db");
  const replicaId = randomUUID();
  const releaseDataFolder = lockDataFolder(config.server.dataDir);
  let db: Db;
  try {
    await prepareReplicaCopy(config, dataFile, replicaId, logger);
    db = openDatabase(dataFile, allMigrations);
  } catch (error) {
    releaseDataFolder();
    throw error;
  }
  setCacheSize(db, CACHE_KIB.starting);
  const checkpointer = new WalCheckpointer(db, dataFile, {
    onError: (message) => logger.warn({ error: message }, "WAL checkpoint failed"),
  });
  const close = async () => {
    // The worker's own connection closes after ours: the last to close checkpoints the log.
    const workerClosed = checkpointer.close();
    db.close();
    // Only then is the folder free: stop() resolving means no file in it is still being written.
    await workerClosed;
    releaseDataFolder();
  };
  try {
    const replica = await connectReplica(config, db, replicaId, logger, onReachability);
    return { db, replica, reachable: () => databaseReachable(db), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * With storage.postgres, this server is one replica of a fleet sharing that database: every write
 * (tools, skill packs, activations, usage, events) goes through its change log and every replica
 * applies it to its own SQLite copy (docs/replicas.md).
 */
async function connectReplica(
  config: WayfindConfig,
  db: Db,
  id: string,
  logger: Logger,
  onReachability: (reachable: boolean) => void,
): Promise<Replica | undefined> {
  const postgres = config.storage.postgres;
  if (postgres === undefined) return undefined;
  const where = redactedUrl(postgres.url);
  let away = false;
  let replica: Replica;
  try {
    replica = await Replica.connect({
      postgres,
      id,
      db,
      holdsStandaloneState: () => holdsStandaloneState(db),
      // Once degraded mode is logged, each retry's failure is detail; a copy behind the log needs an operator.
      onError: (error) =>
        logger[error instanceof CopyBehindLog ? "error" : away ? "debug" : "warn"](
          { err: error, database: where },
          "shared database call failed",
        ),
      onReachability: (reachable) => {
        away = !reachable;
        if (reachable) logger.info({ database: where }, "shared database is back; writes are served again");
        else
          logger.warn(
            { database: where },
            "shared database unreachable: writes fail (UNAVAILABLE), reads are served from this replica's copy, marked wayfind-stale",
          );
        onReachability(reachable);
      },
      onCompacted: (report) => logger.info({ ...report, database: where }, "shared change log compacted"),
    });
  } catch (error) {
    throw sharedDatabaseError(error, where, "connecting to");
  }
  markKeysShared(db);
  logger.info(
    { database: where, replica: replica.id },
    "replica of a shared database: tools, skills, activations, usage, events and API keys are shared",
  );
  return replica;
}

/**
 * With storage.postgres, before the copy is opened: a new replica starts from the newest snapshot of
 * the shared state, and one whose copy fell behind the compacted log gets it replaced.
 */
async function prepareReplicaCopy(config: WayfindConfig, file: string, replicaId: string, logger: Logger) {
  const postgres = config.storage.postgres;
  if (postgres === undefined) return;
  const where = redactedUrl(postgres.url);
  let restored: number | undefined;
  try {
    // First: a copy about to be replaced by a snapshot would lose keys only it holds.
    await shareLocalKeys(postgres, file, where, logger);
    restored = await Replica.prepareCopy(postgres, {
      file,
      replicaId,
      holdsStandaloneState,
      onError: (error) => logger.warn({ err: error, database: where }, "shared database call failed"),
    });
  } catch (error) {
    throw sharedDatabaseError(error, where, "preparing this replica's copy from");
  }
  if (restored !== undefined)
    logger.info({ database: where, seq: restored }, "replica copy restored from the shared snapshot");
}

/** A copy holding events or usage a server recorded without PostgreSQL: it can never be a replica's. */
function holdsStandaloneState(db: Db): boolean {
  return db.prepare("SELECT 1 FROM events UNION ALL SELECT 1 FROM usage_records LIMIT 1").get() !== undefined;
}

/** A start that failed on the shared database, saying what was being done and what to check. */
function sharedDatabaseError(error: unknown, where: string, doing: string): ConfigError {
  if (error instanceof WayfindError) return new ConfigError([`storage.postgres: ${error.message}`]);
  return new ConfigError([
    `storage.postgres: ${doing} ${where} failed (${errorReason(error)}); check the URL, that the server runs and accepts this user`,
  ]);
}

/** The URL without its password, for logs and errors. */
export function redactedUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

/** A trivial query answers: the database file is open and readable. */
function databaseReachable(db: Db): boolean {
  try {
    db.prepare("SELECT 1").get();
    return true;
  } catch {
    return false;
  }
}
