import { createHash, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { type FileHandle, open, readdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import type pg from "pg";
import type { Db } from "../database/sqlite.ts";
import { WayfindError } from "../errors.ts";
import { workerEntry } from "../worker-entry.ts";
import { type ChangeLog, inTransaction, withClient } from "./change-log.ts";
import { readAppliedSeq } from "./follower.ts";

/**
 * Snapshots of a replica's SQLite copy stored in PostgreSQL (docs/replicas.md "Compaction"): what lets
 * the change log be compacted, and a new replica start without replaying the log from its first change.
 */

/** Stored in rows of this size: no single value near PostgreSQL's 1 GB limit, nor a large buffer here. */
const CHUNK_BYTES = 1024 * 1024;

export interface StoredSnapshot {
  /** The last change the snapshot holds. */
  readonly seq: number;
  readonly bytes: number;
}

/** The snapshots on the shared database: the newest is kept, older ones are replaced. */
export class SnapshotStore {
  constructor(private readonly pool: pg.Pool) {}

  /** The newest snapshot, or undefined when none was stored yet. */
  async latest(): Promise<StoredSnapshot | undefined> {
    const { rows } = await this.pool.query<{ seq: string; bytes: string }>(
      "SELECT seq, bytes FROM wayfind_snapshots ORDER BY seq DESC LIMIT 1",
    );
    const row = rows[0];
    return row && { seq: Number(row.seq), bytes: Number(row.bytes) };
  }

  /**
   * Stores the snapshot file `file` (holding the log through `seq`) in one transaction, so a crash
   * leaves either all of it or nothing, and drops the older snapshots in the same transaction.
   */
  async store(file: string, seq: number, createdBy: string): Promise<StoredSnapshot> {
    return this.transactionWithFile(file, "r", async (client, handle) => {
      const stored = await writeSnapshot(client, handle, seq, createdBy);
      await client.query("DELETE FROM wayfind_snapshots WHERE seq < $1", [seq]);
      return stored;
    });
  }

  /**
   * Writes the newest snapshot to `into` and returns it. One repeatable-read transaction: a newer
   * snapshot stored meanwhile does not mix its chunks into this one. Checked against its size and
   * SHA-256 before it is used.
   */
  async download(into: string): Promise<StoredSnapshot> {
    return this.transactionWithFile(into, "w", async (client, handle) => {
      await client.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
      const { rows } = await client.query<{ seq: string; bytes: string; sha256: string }>(
        "SELECT seq, bytes, sha256 FROM wayfind_snapshots ORDER BY seq DESC LIMIT 1",
      );
      const row = rows[0];
      if (row === undefined) throw new Error("the shared database holds no snapshot");
      const seq = Number(row.seq);
      const hash = createHash("sha256");
      let bytes = 0;
      // One chunk per query: memory stays at one chunk whatever the snapshot's size.
      for (let n = 0; ; n++) {
        const chunk = await client.query<{ data: Buffer }>(
          "SELECT data FROM wayfind_snapshot_chunks WHERE seq = $1 AND n = $2",
          [seq, n],
        );
        const data = chunk.rows[0]?.data;
        if (data === undefined) break;
        hash.update(data);
        bytes += data.length;
        await handle.write(data);
      }
      if (bytes !== Number(row.bytes) || hash.digest("hex") !== row.sha256)
        throw new Error(
          `snapshot ${seq} is damaged: ${bytes} bytes read of ${row.bytes}, or a SHA-256 mismatch`,
        );
      await handle.sync();
      return { seq, bytes };
    });
  }

  /** `work` in one transaction, with `path` open: both closed whatever happens. */
  private async transactionWithFile<T>(
    path: string,
    flags: "r" | "w",
    work: (client: pg.PoolClient, handle: FileHandle) => Promise<T>,
  ): Promise<T> {
    return withClient(this.pool, async (client) => {
      const handle = await open(path, flags);
      try {
        return await inTransaction(client, () => work(client, handle));
      } finally {
        await handle.close();
      }
    });
  }
}

/**
 * Writes the snapshot read from `handle` (holding the log through `seq`) in `client`'s transaction:
 * its chunks, then its size and SHA-256, which a download checks.
 */
export async function writeSnapshot(
  client: pg.PoolClient,
  handle: FileHandle,
  seq: number,
  createdBy: string,
): Promise<StoredSnapshot> {
  const hash = createHash("sha256");
  let bytes = 0;
  await client.query(
    "INSERT INTO wayfind_snapshots (seq, bytes, sha256, created_by) VALUES ($1, 0, '', $2)",
    [seq, createdBy],
  );
  for (let n = 0; ; n++) {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(CHUNK_BYTES), 0, CHUNK_BYTES);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    hash.update(chunk);
    bytes += bytesRead;
    await client.query("INSERT INTO wayfind_snapshot_chunks (seq, n, data) VALUES ($1, $2, $3)", [
      seq,
      n,
      chunk,
    ]);
  }
  await client.query("UPDATE wayfind_snapshots SET bytes = $2, sha256 = $3 WHERE seq = $1", [
    seq,
    bytes,
    hash.digest("hex"),
  ]);
  return { seq, bytes };
}

/**
 * Takes a snapshot of the copy `file` into `into` on a worker thread (VACUUM INTO on a connection of
 * its own) and returns the seq it holds. Every table of a copy is the fleet's (the API keys too, as
 * SHA-256s), so the snapshot holds them all.
 */
export function takeSnapshot(file: string, into: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerEntry(import.meta.url, "snapshot-worker"), {
      workerData: { file, into },
    });
    let settled = false;
    worker.once("message", (message: { seq?: number; error?: string }) => {
      settled = true;
      if (message.seq !== undefined) resolve(message.seq);
      else reject(new Error(`snapshot of ${file} failed: ${message.error}`));
    });
    worker.once("error", (error) => {
      settled = true;
      reject(error);
    });
    worker.once("exit", (code) => {
      if (!settled) reject(new Error(`the snapshot worker exited (${code}) without a snapshot`));
    });
  });
}

/** Suffixes of the temporary files beside a copy: snapshots being taken, and being restored. */
export const SNAPSHOT_SUFFIX = ".snapshot-";
const RESTORING_SUFFIX = ".restoring-";

/** Temporary files a replica killed while taking or restoring a snapshot left beside its copy. */
async function removeLeftovers(file: string): Promise<void> {
  const folder = dirname(file);
  if (!existsSync(folder)) return;
  const prefixes = [SNAPSHOT_SUFFIX, RESTORING_SUFFIX].map((suffix) => `${basename(file)}${suffix}`);
  for (const name of await readdir(folder))
    if (prefixes.some((prefix) => name.startsWith(prefix))) await rm(join(folder, name), { force: true });
}

/** What a data dir's file is to this shared database. */
type CopyState =
  | { readonly kind: "new" }
  | { readonly kind: "ours"; readonly applied: number }
  /** Another database's copy, or a standalone server's state: left alone, the replica refuses it. */
  | { readonly kind: "not-ours" };

function copyState(file: string, clusterId: string, holdsStandaloneState: (db: Db) => boolean): CopyState {
  if (!existsSync(file)) return { kind: "new" };
  // Not read-only: a copy left by a kill -9 has a write-ahead log to recover. The data dir is ours.
  const db = new Database(file, { fileMustExist: true });
  try {
    const replicationTables = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'replication_cluster'")
      .get();
    // A file of a wayfind older than replication: opened, migrated and judged as usual.
    if (replicationTables === undefined) return { kind: "not-ours" };
    const claimed = db.prepare<[], { id: string }>("SELECT id FROM replication_cluster").get()?.id;
    if (claimed === clusterId) return { kind: "ours", applied: readAppliedSeq(db) };
    if (claimed !== undefined || holdsStandaloneState(db)) return { kind: "not-ours" };
    return { kind: "new" };
  } finally {
    db.close();
  }
}

export interface PrepareCopyOptions {
  /** The replica's SQLite copy, not opened yet (its data dir is locked by this server). */
  readonly file: string;
  readonly log: ChangeLog;
  readonly snapshots: SnapshotStore;
  /** The id the replica reports its applied seq under (compaction keeps what it still needs). */
  readonly replicaId: string;
  /** True when a file holds state a server wrote without PostgreSQL (never replaced: refused later). */
  readonly holdsStandaloneState: (db: Db) => boolean;
}

/**
 * Before a replica opens its copy: a new copy starts from the newest snapshot rather than the whole
 * log, and a copy that fell behind the compacted log (its replica was away longer than the replica
 * timeout) is replaced by it. Returns the snapshot seq restored, or
 * undefined when the copy is used as it is.
 */
export async function prepareCopy(options: PrepareCopyOptions): Promise<number | undefined> {
  const { file, log, snapshots, replicaId } = options;
  await removeLeftovers(file);
  const state = copyState(file, await log.clusterId(), options.holdsStandaloneState);
  if (state.kind === "not-ours") return undefined;
  const applied = state.kind === "ours" ? state.applied : 0;
  // Reported first: from here compaction keeps the changes after it (and the snapshot it may restore
  // is at least as new), so nothing this copy needs is deleted while it starts.
  await log.reportApplied(replicaId, applied);
  const oldest = await log.oldest();
  const behindLog = oldest > applied + 1;
  const latest = await snapshots.latest();
  // A snapshot at seq 0 is a data folder moved onto an empty database (wayfind storage copy-to-postgres).
  const restore = behindLog || (state.kind === "new" && latest !== undefined);
  if (!restore) return undefined;
  if (latest === undefined)
    throw new WayfindError(
      "failed_precondition",
      `the shared log starts at change ${oldest} but holds no snapshot to start a copy from: the database was compacted by hand, or its snapshot deleted`,
    );
  await log.reportApplied(replicaId, latest.seq);
  const incoming = `${file}${RESTORING_SUFFIX}${randomUUID()}`;
  try {
    const restored = await snapshots.download(incoming);
    // The old file's write-ahead log must go before the new file takes its name: SQLite would apply it.
    for (const suffix of ["-wal", "-shm", ""]) await rm(`${file}${suffix}`, { force: true });
    await rename(incoming, file);
    return restored.seq;
  } finally {
    await rm(incoming, { force: true });
  }
}
