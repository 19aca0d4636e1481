import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { authMigrations } from "../../src/auth/schema.ts";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import { WayfindError } from "../../src/errors.ts";
import { ChangeLog } from "../../src/replication/change-log.ts";
import { startCompaction } from "../../src/replication/compaction.ts";
import {
  CopyBehindLog,
  FOLLOWER_MIGRATIONS,
  Follower,
  readAppliedSeq,
} from "../../src/replication/follower.ts";
import { holdLease } from "../../src/replication/lease.ts";
import { prepareCopy, SnapshotStore, takeSnapshot } from "../../src/replication/snapshots.ts";
import {
  createDatabase,
  postgresUnavailable,
  startPostgres,
  type TestPostgres,
} from "../support/postgres.ts";

// Issue 17, log compaction (docs/replicas.md "Compaction"): snapshots of a copy stored in a real
// PostgreSQL, the log compacted behind them, and copies started or repaired from them.
const unavailable = postgresUnavailable();
const title = `log compaction${unavailable ? ` (skipped: ${unavailable})` : ""}`;

const NOTES_MIGRATION = {
  id: "test/001-notes",
  up: "CREATE TABLE notes (seq INTEGER PRIMARY KEY, text TEXT NOT NULL)",
};

describe.skipIf(unavailable !== undefined)(title, () => {
  let server: TestPostgres;
  let databaseCount = 0;
  const pools: pg.Pool[] = [];
  const opened: Db[] = [];
  const folder = mkdtempSync(join(tmpdir(), "wayfind-compaction-"));

  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterEach(() => {
    for (const db of opened.splice(0)) if (db.open) db.close();
  });
  afterAll(async () => {
    for (const pool of pools) await pool.end();
    await server?.stop();
  });

  /** A change log on a database of its own: compaction tests must not see each other's changes. */
  async function freshLog() {
    const url = await createDatabase(server.url, `compaction_${++databaseCount}`);
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    pools.push(pool);
    const log = await ChangeLog.open(pool);
    return { pool, log, snapshots: new SnapshotStore(pool) };
  }

  const file = (name: string) => join(folder, `${databaseCount}-${name}`);

  /** A replica's copy of `log` (claimed as its cluster's), with an API keys table and the notes. */
  async function copyOf(log: ChangeLog, path: string): Promise<Db> {
    const db = openDatabase(path, [...FOLLOWER_MIGRATIONS, ...authMigrations, NOTES_MIGRATION]);
    opened.push(db);
    db.prepare("INSERT OR IGNORE INTO replication_cluster (id) VALUES (?)").run(await log.clusterId());
    return db;
  }

  async function catchUp(log: ChangeLog, db: Db): Promise<void> {
    const insert = db.prepare("INSERT INTO notes (seq, text) VALUES (?, ?)");
    const appliers = new Map([
      [
        "note",
        (change: { seq: number; payload: unknown }) =>
          insert.run(change.seq, (change.payload as { text: string }).text),
      ],
    ]);
    await new Follower({ log, db, appliers }).catchUp();
  }

  const appendNotes = (log: ChangeLog, count: number, prefix = "note") =>
    log.append(
      Array.from({ length: count }, (_, i) => ({
        kind: "note",
        tenantId: "",
        payload: { text: `${prefix} ${i}` },
      })),
    );

  /** prepareCopy of the copy at `path`, for a replica that never holds standalone state. */
  const prepareCopyOf = (path: string, log: ChangeLog, snapshots: SnapshotStore) =>
    prepareCopy({ file: path, log, snapshots, replicaId: basename(path), holdsStandaloneState: () => false });

  /** Takes a snapshot of `copy` and stores it, as the replica holding the compaction lease does. */
  async function storeSnapshotOf(copy: Db, snapshots: SnapshotStore): Promise<void> {
    const snapshotFile = file(`snapshot-${randomUUID()}.db`);
    await snapshots.store(snapshotFile, await takeSnapshot(copy.name, snapshotFile), "test");
  }

  const notes = (db: Db) =>
    db
      .prepare<[], { seq: number }>("SELECT seq FROM notes ORDER BY seq")
      .all()
      .map((row) => row.seq);

  function addApiKey(db: Db, id: string): void {
    db.prepare(
      "INSERT INTO api_keys (id, key_sha256, tenant_id, roles_json, entitlements_json, projects_json, created_at_ms) VALUES (?, ?, 'acme', '[]', '[]', '[]', 0)",
    ).run(id, `sha-${id}`);
  }

  it("deletes the changes a snapshot holds and every live replica applied, and always keeps the newest", async () => {
    const { log } = await freshLog();
    await appendNotes(log, 10);
    await log.reportApplied("a", 10);
    await log.reportApplied("b", 6);
    expect(await log.compact(8, 60_000)).toEqual({ through: 6, deleted: 6 });
    expect(await log.oldest()).toBe(7);

    await log.reportApplied("b", 10);
    expect(await log.compact(10, 60_000)).toEqual({ through: 9, deleted: 3 });
    expect(await log.oldest()).toBe(10);
    // Appends number on from the newest change, which compaction kept.
    expect(await appendNotes(log, 2)).toEqual([11, 12]);
  });

  it("forgets a replica not heard from within the replica timeout", async () => {
    const { log, pool } = await freshLog();
    await appendNotes(log, 10);
    await log.reportApplied("live", 10);
    await log.reportApplied("gone", 2);
    await pool.query("UPDATE wayfind_replicas SET seen_at = now() - interval '1 hour' WHERE id = 'gone'");
    expect(await log.compact(10, 60_000)).toEqual({ through: 9, deleted: 9 });
    const { rows } = await pool.query<{ id: string }>("SELECT id FROM wayfind_replicas");
    expect(rows.map((row) => row.id)).toEqual(["live"]);
  });

  it("takes a snapshot holding the copy's applied changes and its API keys (the fleet's, as SHA-256s)", async () => {
    const { log } = await freshLog();
    const copy = await copyOf(log, file("copy.db"));
    await appendNotes(log, 5);
    await catchUp(log, copy);
    addApiKey(copy, "fleet-key");

    const snapshotFile = file("snapshot.db");
    expect(await takeSnapshot(copy.name, snapshotFile)).toBe(5);
    const snapshot = openDatabase(snapshotFile, []);
    opened.push(snapshot);
    expect(notes(snapshot)).toEqual([1, 2, 3, 4, 5]);
    expect(readAppliedSeq(snapshot)).toBe(5);
    expect(snapshot.prepare("SELECT id FROM api_keys").all()).toEqual([{ id: "fleet-key" }]);
  });

  it("stores a snapshot in chunks, keeps only the newest and gives it back byte for byte", async () => {
    const { snapshots, pool } = await freshLog();
    const older = file("older.bin");
    const newer = file("newer.bin");
    writeFileSync(older, randomBytes(1000));
    writeFileSync(newer, randomBytes(2.5 * 1024 * 1024));
    await snapshots.store(older, 5, "replica-a");
    expect(await snapshots.store(newer, 9, "replica-b")).toEqual({ seq: 9, bytes: 2.5 * 1024 * 1024 });

    expect(await snapshots.latest()).toEqual({ seq: 9, bytes: 2.5 * 1024 * 1024 });
    const back = file("back.bin");
    expect(await snapshots.download(back)).toEqual({ seq: 9, bytes: 2.5 * 1024 * 1024 });
    expect(readFileSync(back).equals(readFileSync(newer))).toBe(true);
    const { rows } = await pool.query(
      "SELECT seq, count(*)::int AS chunks FROM wayfind_snapshot_chunks GROUP BY seq",
    );
    expect(rows).toEqual([{ seq: "9", chunks: 3 }]);
  });

  it("refuses a damaged snapshot", async () => {
    const { snapshots, pool } = await freshLog();
    const stored = file("stored.bin");
    writeFileSync(stored, randomBytes(4096));
    await snapshots.store(stored, 3, "replica-a");
    await pool.query("UPDATE wayfind_snapshot_chunks SET data = $1", [randomBytes(4096)]);
    await expect(snapshots.download(file("damaged.bin"))).rejects.toThrow(/snapshot 3 is damaged/);
  });

  it("starts a new copy from the newest snapshot, and the log brings it up to date", async () => {
    const { log, snapshots } = await freshLog();
    const first = await copyOf(log, file("first.db"));
    await appendNotes(log, 10);
    await catchUp(log, first);
    await storeSnapshotOf(first, snapshots);
    await log.reportApplied("first", 10);
    await log.compact(10, 60_000);
    await appendNotes(log, 3, "after");

    const newFile = file("new.db");
    const restored = await prepareCopyOf(newFile, log, snapshots);
    expect(restored).toBe(10);
    const copy = await copyOf(log, newFile);
    await catchUp(log, copy);
    expect(notes(copy)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
  });

  it("replaces a copy that fell behind the compacted log, its API keys with the snapshot's", async () => {
    const { log, snapshots, pool } = await freshLog();
    const behindFile = file("behind.db");
    const behind = await copyOf(log, behindFile);
    await appendNotes(log, 3);
    await catchUp(log, behind);
    addApiKey(behind, "revoked-since");
    behind.close();

    const ahead = await copyOf(log, file("ahead.db"));
    await appendNotes(log, 7);
    await catchUp(log, ahead);
    addApiKey(ahead, "created-since");
    await storeSnapshotOf(ahead, snapshots);
    // The behind copy's replica was away past the timeout: compaction no longer waits for it.
    await log.reportApplied("behind", 3);
    await pool.query("UPDATE wayfind_replicas SET seen_at = now() - interval '1 hour'");
    await log.compact(10, 60_000);
    expect(await log.oldest()).toBe(10);

    const restored = await prepareCopyOf(behindFile, log, snapshots);
    expect(restored).toBe(10);
    const copy = await copyOf(log, behindFile);
    await catchUp(log, copy);
    expect(notes(copy)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(copy.prepare("SELECT id FROM api_keys").all()).toEqual([{ id: "created-since" }]);
  });

  // A data dir's own keys were shared before (src/server/copy-keys.ts): the snapshot's are the fleet's.
  it("starts a data dir set up before its replica's first start from the snapshot, and clears what a killed start left", async () => {
    const { log, snapshots } = await freshLog();
    const first = await copyOf(log, file("first.db"));
    await appendNotes(log, 4);
    await catchUp(log, first);
    await storeSnapshotOf(first, snapshots);

    // `wayfind keys create --data-dir` before the replica ever ran: a file with a key and nothing else.
    const prepared = openDatabase(file("prepared.db"), [
      ...FOLLOWER_MIGRATIONS,
      ...authMigrations,
      NOTES_MIGRATION,
    ]);
    addApiKey(prepared, "made-before-start");
    prepared.close();
    const leftovers = [`${prepared.name}.restoring-killed`, `${prepared.name}.snapshot-killed`];
    for (const leftover of leftovers) writeFileSync(leftover, "partial");

    expect(await prepareCopyOf(prepared.name, log, snapshots)).toBe(4);
    const copy = await copyOf(log, prepared.name);
    expect(notes(copy)).toEqual([1, 2, 3, 4]);
    expect(copy.prepare("SELECT id FROM api_keys").all()).toEqual([]);
    expect(leftovers.filter((leftover) => existsSync(leftover))).toEqual([]);
  });

  it("leaves alone a copy the log can still bring up to date, and another database's copy", async () => {
    const { log, snapshots } = await freshLog();
    const lagging = await copyOf(log, file("lagging.db"));
    await appendNotes(log, 4);
    await catchUp(log, lagging);
    await storeSnapshotOf(lagging, snapshots);
    await appendNotes(log, 4);
    lagging.close();
    expect(await prepareCopyOf(lagging.name, log, snapshots)).toBeUndefined();

    const foreign = openDatabase(file("foreign.db"), [...FOLLOWER_MIGRATIONS]);
    foreign
      .prepare("INSERT INTO replication_cluster (id) VALUES ('00000000-0000-0000-0000-000000000000')")
      .run();
    foreign.close();
    expect(await prepareCopyOf(foreign.name, log, snapshots)).toBeUndefined();
    const reopened = openDatabase(foreign.name, []);
    opened.push(reopened);
    expect(reopened.prepare("SELECT id FROM replication_cluster").get()).toEqual({
      id: "00000000-0000-0000-0000-000000000000",
    });
  });

  it("reports a replica's applied seq as soon as compaction starts, not at the first heartbeat", async () => {
    const { log, snapshots, pool } = await freshLog();
    const copy = await copyOf(log, file("reporting.db"));
    const stop = startCompaction({
      log,
      snapshots,
      settings: { everyChanges: 1_000, checkIntervalMs: 60_000, replicaTimeoutMs: 60_000 },
      replicaId: "just-caught-up",
      dataFile: copy.name,
      appliedSeq: () => 42,
      lease: (name, handlers) => holdLease({ connectionString: server.url }, name, handlers),
      onCompacted: () => {},
      onError: (error) => {
        throw error;
      },
    });
    try {
      const reported = async () =>
        (await pool.query("SELECT applied_seq FROM wayfind_replicas WHERE id = 'just-caught-up'")).rows;
      // Heartbeats come every 5 s; the first report is sent at once.
      for (const deadline = Date.now() + 2_000; (await reported()).length === 0 && Date.now() < deadline; )
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await reported()).toEqual([{ applied_seq: "42" }]);
    } finally {
      await stop();
    }
  });

  it("tells a running copy that the log was compacted past it, and how to recover", async () => {
    const { log, pool } = await freshLog();
    const copy = await copyOf(log, file("stranded.db"));
    await appendNotes(log, 3);
    await catchUp(log, copy);
    await appendNotes(log, 5);
    await pool.query("DELETE FROM wayfind_changes WHERE seq < 7");
    const attempt = catchUp(log, copy);
    await expect(attempt).rejects.toThrow(CopyBehindLog);
    await expect(attempt).rejects.toThrow(
      /applied the shared log through change 3, but the log now starts at 7.*restart the replica/,
    );
    expect(notes(copy)).toEqual([1, 2, 3]);
  });

  it("refuses to start a copy from a log compacted without a snapshot, saying so", async () => {
    const { log, snapshots, pool } = await freshLog();
    await appendNotes(log, 5);
    await pool.query("DELETE FROM wayfind_changes WHERE seq < 4");
    const attempt = prepareCopyOf(file("new.db"), log, snapshots);
    await expect(attempt).rejects.toThrow(WayfindError);
    await expect(attempt).rejects.toThrow(/starts at change 4 but holds no snapshot/);
  });
});
