import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import { afterCommit } from "../../src/database/transaction.ts";
import { type Change, ChangeLog } from "../../src/replication/change-log.ts";
import { FOLLOWER_MIGRATIONS, Follower, follow } from "../../src/replication/follower.ts";
import { postgresUnavailable, startPostgres, type TestPostgres } from "../support/postgres.ts";

// Issue 17 step 1 (docs/replicas.md "Followers"): a replica's SQLite copy kept up to date from the
// change log on a real PostgreSQL server.
const unavailable = postgresUnavailable();
const title = `a follower${unavailable ? ` (skipped: ${unavailable})` : ""}`;

/** A replica's local copy: SQLite with the follower's table and one table the test changes fill. */
function localCopy(file = join(mkdtempSync(join(tmpdir(), "wayfind-replica-")), "wayfind.db")): {
  db: Db;
  file: string;
} {
  const db = openDatabase(file, [
    ...FOLLOWER_MIGRATIONS,
    { id: "test/001-notes", up: "CREATE TABLE notes (seq INTEGER PRIMARY KEY, text TEXT NOT NULL)" },
  ]);
  return { db, file };
}

/** Appliers writing each "note" change into the notes table; `seen` gets each after its commit. */
function noteAppliers(db: Db, seen: number[] = []): Map<string, (change: Change) => void> {
  const insert = db.prepare("INSERT INTO notes (seq, text) VALUES (?, ?)");
  return new Map([
    [
      "note",
      (change: Change) => {
        insert.run(change.seq, (change.payload as { text: string }).text);
        afterCommit(db, () => seen.push(change.seq));
      },
    ],
  ]);
}

const notes = (db: Db) =>
  db.prepare<[], { seq: number; text: string }>("SELECT seq, text FROM notes ORDER BY seq").all();

describe.skipIf(unavailable !== undefined)(title, () => {
  let server: TestPostgres;
  let pool: pg.Pool;
  let log: ChangeLog;
  const opened: Db[] = [];

  beforeAll(async () => {
    server = await startPostgres();
    pool = new pg.Pool({ connectionString: server.url, max: 10 });
    log = await ChangeLog.open(pool);
  }, 60_000);
  afterEach(() => {
    for (const db of opened.splice(0)) db.close();
  });
  afterAll(async () => {
    await pool?.end();
    await server?.stop();
  });

  /** A fresh log: each test starts from seq 0. */
  async function emptyLog(): Promise<void> {
    await pool.query("TRUNCATE wayfind_changes");
  }

  const note = (text: string) => ({ kind: "note", tenantId: "", payload: { text } });

  it("applies every change once, in order, and tells in-memory state after each commit", async () => {
    await emptyLog();
    const { db } = localCopy();
    opened.push(db);
    const seen: number[] = [];
    const follower = new Follower({ log, db, appliers: noteAppliers(db, seen), pageSize: 2 });
    await log.append([note("a"), note("b"), note("c")]);
    await log.append([note("d")]);
    await follower.catchUp();
    expect(notes(db)).toEqual([
      { seq: 1, text: "a" },
      { seq: 2, text: "b" },
      { seq: 3, text: "c" },
      { seq: 4, text: "d" },
    ]);
    expect(follower.applied).toBe(4);
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it("keeps the commit time of the last change it applied, across restarts: the clock retention counts from", async () => {
    await emptyLog();
    const { db, file } = localCopy();
    const follower = new Follower({ log, db, appliers: noteAppliers(db) });
    expect(follower.appliedAtMs).toBe(0);
    await log.append([note("a")]);
    await log.append([note("b")]);
    await follower.catchUp();
    const last = (await log.after(1, 1))[0];
    expect(follower.appliedAtMs).toBe(last?.committedAt.getTime());
    db.close();
    const reopened = localCopy(file).db;
    opened.push(reopened);
    expect(new Follower({ log, db: reopened, appliers: noteAppliers(reopened) }).appliedAtMs).toBe(
      last?.committedAt.getTime(),
    );
  });

  it("goes on after a restart from the seq it stored with the rows, applying nothing twice", async () => {
    await emptyLog();
    const { db, file } = localCopy();
    await log.append([note("a"), note("b")]);
    await new Follower({ log, db, appliers: noteAppliers(db) }).catchUp();
    db.close();

    await log.append([note("c")]);
    const reopened = localCopy(file).db;
    opened.push(reopened);
    const follower = new Follower({ log, db: reopened, appliers: noteAppliers(reopened) });
    expect(follower.applied).toBe(2);
    await follower.catchUp();
    expect(notes(reopened).map((row) => row.text)).toEqual(["a", "b", "c"]);
  });

  it("applies a page all or nothing: a change that fails leaves the copy and its seq as they were", async () => {
    await emptyLog();
    const { db } = localCopy();
    opened.push(db);
    await log.append([note("a"), note("b"), { kind: "unknown", tenantId: "", payload: {} }]);
    const follower = new Follower({ log, db, appliers: noteAppliers(db) });
    await expect(follower.catchUp()).rejects.toThrow(/kind "unknown", which this replica cannot apply/);
    expect(notes(db)).toEqual([]);
    expect(follower.applied).toBe(0);
  });

  it("fences a read: everything committed through another replica before the call is applied first", async () => {
    await emptyLog();
    const { db } = localCopy();
    opened.push(db);
    const follower = new Follower({ log, db, appliers: noteAppliers(db) });
    // Another replica: its own pool on the same database.
    const otherPool = new pg.Pool({ connectionString: server.url, max: 2 });
    try {
      const other = await ChangeLog.open(otherPool);
      await other.append([note("written elsewhere")]);
      await Promise.all([follower.fence(), follower.fence(), follower.fence()]);
      expect(notes(db).map((row) => row.text)).toEqual(["written elsewhere"]);
    } finally {
      await otherPool.end();
    }
  });

  it("fences a call with a head read sent after the call, not one already in flight before a write", async () => {
    await emptyLog();
    const { db } = localCopy();
    opened.push(db);
    // A slow head query: it reads the head at once and answers when released.
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const slowLog = Object.create(log) as ChangeLog;
    slowLog.head = () => {
      const read = log.head();
      return released.then(() => read);
    };
    const follower = new Follower({ log: slowLog, db, appliers: noteAppliers(db) });
    const early = follower.fence(); // its head read predates the write below
    await new Promise((resolve) => setTimeout(resolve, 50));
    await log.append([note("acknowledged before the second call")]);
    const late = follower.fence();
    release();
    await Promise.all([early, late]);
    expect(notes(db).map((row) => row.text)).toEqual(["acknowledged before the second call"]);
  });

  it("follows on its own: woken by each commit, and by its poll when a wake-up is missed", async () => {
    await emptyLog();
    const { db } = localCopy();
    opened.push(db);
    const follower = new Follower({ log, db, appliers: noteAppliers(db) });
    const stop = await follow(follower, { connectionString: server.url }, { pollMs: 200 });
    const waitForApplied = async (seq: number) => {
      const deadline = Date.now() + 5_000;
      while (follower.applied < seq && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 10));
      return follower.applied;
    };
    try {
      await log.append([note("woken")]);
      expect(await waitForApplied(1)).toBe(1);
      // A change that sends no NOTIFY (as one sent while the listener was disconnected): the poll finds it.
      await pool.query(
        "INSERT INTO wayfind_changes (seq, kind, payload) VALUES (2, 'note', '{\"text\": \"polled\"}')",
      );
      expect(await waitForApplied(2)).toBe(2);
      expect(notes(db).map((row) => row.text)).toEqual(["woken", "polled"]);
    } finally {
      await stop();
    }
  });
});
