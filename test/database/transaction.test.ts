import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/database/sqlite.ts";
import {
  afterCommit,
  inWriteTransaction,
  onRollback,
  writeTransaction,
} from "../../src/database/transaction.ts";

function memoryDb() {
  const db = openDatabase(":memory:", []);
  db.exec("CREATE TABLE t (n INTEGER NOT NULL)");
  return db;
}

describe("writeTransaction", () => {
  it("runs after-commit work once the change is committed, in registration order", () => {
    const db = memoryDb();
    const seen: string[] = [];
    const result = writeTransaction(db, () => {
      db.prepare("INSERT INTO t VALUES (1)").run();
      afterCommit(db, () =>
        seen.push(`first, committed rows: ${db.prepare("SELECT count(*) FROM t").pluck().get()}`),
      );
      afterCommit(db, () => seen.push(`second, in a transaction: ${db.inTransaction}`));
      expect(seen).toEqual([]);
      return "done";
    });
    expect(result).toBe("done");
    expect(seen).toEqual(["first, committed rows: 1", "second, in a transaction: false"]);
  });

  it("never runs after-commit work of a change that rolled back", () => {
    const db = memoryDb();
    const seen: string[] = [];
    expect(() =>
      writeTransaction(db, () => {
        db.prepare("INSERT INTO t VALUES (1)").run();
        afterCommit(db, () => seen.push("ran"));
        throw new Error("change refused");
      }),
    ).toThrow("change refused");
    expect(seen).toEqual([]);
    expect(db.prepare("SELECT count(*) FROM t").pluck().get()).toBe(0);
    expect(inWriteTransaction(db)).toBe(false);
  });

  it("undoes in-memory state of a rolled-back change and of a rolled-back nested one, newest first", () => {
    const db = memoryDb();
    const undone: string[] = [];
    writeTransaction(db, () => {
      onRollback(db, () => undone.push("outer, kept"));
      expect(() =>
        writeTransaction(db, () => {
          onRollback(db, () => undone.push("inner 1"));
          onRollback(db, () => undone.push("inner 2"));
          throw new Error("inner refused");
        }),
      ).toThrow("inner refused");
    });
    expect(undone).toEqual(["inner 2", "inner 1"]);
    expect(() =>
      writeTransaction(db, () => {
        onRollback(db, () => undone.push("refused"));
        throw new Error("change refused");
      }),
    ).toThrow("change refused");
    expect(undone).toEqual(["inner 2", "inner 1", "refused"]);
  });

  it("drops the after-commit work of a nested change that rolled back, keeps the outer one's", () => {
    const db = memoryDb();
    const seen: string[] = [];
    writeTransaction(db, () => {
      afterCommit(db, () => seen.push("outer"));
      expect(() =>
        writeTransaction(db, () => {
          db.prepare("INSERT INTO t VALUES (2)").run();
          afterCommit(db, () => seen.push("inner"));
          throw new Error("inner refused");
        }),
      ).toThrow("inner refused");
      db.prepare("INSERT INTO t VALUES (1)").run();
    });
    expect(seen).toEqual(["outer"]);
    expect(db.prepare("SELECT n FROM t").pluck().all()).toEqual([1]);
  });

  it("refuses to run inside a transaction it did not open, whose commit it cannot see", () => {
    const db = memoryDb();
    const foreign = db.transaction(() => writeTransaction(db, () => 1));
    expect(() => foreign()).toThrow(/not opened by writeTransaction/);
  });
});
