import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WalCheckpointer } from "../../src/database/checkpointer.ts";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";

const opened: { db: Db; checkpointer?: WalCheckpointer }[] = [];
afterEach(async () => {
  for (const { db, checkpointer } of opened.splice(0)) {
    await checkpointer?.close();
    db.close();
  }
});

/** A database in WAL mode with one table. */
function database(): { db: Db; file: string } {
  const file = join(mkdtempSync(join(tmpdir(), "wayfind-wal-")), "wayfind.db");
  const db = openDatabase(file, [{ id: "t/1", up: "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)" }]);
  opened.push({ db });
  return { db, file };
}

/** `rows` rows of ~1 KB in one transaction (~250 log pages per 1,000 rows). */
function write(db: Db, rows: number): void {
  const insert = db.prepare("INSERT INTO t (body) VALUES (?)");
  db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run("x".repeat(1_000));
  })();
}

async function waitFor(condition: () => boolean): Promise<boolean> {
  for (let i = 0; i < 100 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  return condition();
}

describe("WalCheckpointer", () => {
  it("copies the log into the database file from its own thread; the server's connection never does", async () => {
    const { db, file } = database();
    const checkpointer = new WalCheckpointer(db, file, { intervalMs: 50 });
    (opened[0] as { checkpointer?: WalCheckpointer }).checkpointer = checkpointer;
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
    const before = statSync(file).size;
    // Past the 1,000-page mark at which the connection would checkpoint inline.
    write(db, 6_000);
    expect(await waitFor(() => statSync(file).size > before + 5_000_000)).toBe(true);
  });

  it("is what moves the log: with inline checkpoints off and no worker, the file does not grow", async () => {
    const { db, file } = database();
    db.pragma("wal_autocheckpoint = 0");
    const before = statSync(file).size;
    write(db, 6_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(statSync(file).size).toBe(before);
  });

  it("empties a log that grew past 16 MiB under a steady stream of commits", async () => {
    const { db, file } = database();
    const checkpointer = new WalCheckpointer(db, file, { intervalMs: 50 });
    (opened[0] as { checkpointer?: WalCheckpointer }).checkpointer = checkpointer;
    const walBytes = () => statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0;
    // ~25 MB in small commits with turns between them, as a busy server writes: a PASSIVE checkpoint
    // never catches up, so the log only ever grows, and its file keeps its largest size.
    let largest = 0;
    for (let i = 0; i < 500; i++) {
      write(db, 50);
      largest = Math.max(largest, walBytes());
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(largest).toBeGreaterThan(16 * 1024 * 1024);
    expect(await waitFor(() => walBytes() === 0)).toBe(true);
  });

  it("gives checkpoints back to the connection when it stops", async () => {
    const { db, file } = database();
    const checkpointer = new WalCheckpointer(db, file, { intervalMs: 50 });
    await checkpointer.close();
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
  });
});
