import type { Db } from "./sqlite.ts";

/** Work to run once the write transaction open on a connection has committed. */
interface OpenWrite {
  readonly afterCommit: (() => void)[];
  /** Undo of in-memory state set inside the transaction (see onRollback), newest last. */
  readonly onRollback: (() => void)[];
}

const openWrites = new WeakMap<Db, OpenWrite>();
const beforeWriteHooks = new WeakMap<Db, (() => void)[]>();

/**
 * Runs `hook` right before every outermost `writeTransaction` on `db` opens, outside any transaction.
 * The event log flushes its queued rows here, so events keep their id order on the wire: every event
 * emitted before a change is committed and delivered before the change's own events.
 */
export function beforeWriteTransaction(db: Db, hook: () => void): void {
  const hooks = beforeWriteHooks.get(db);
  if (hooks) hooks.push(hook);
  else beforeWriteHooks.set(db, [hook]);
}

/**
 * Runs `change` as one IMMEDIATE transaction (the write lock is taken up front, so concurrent writers
 * queue on busy_timeout instead of failing to upgrade a read lock). Whatever `change` registers with
 * `afterCommit` runs right after the commit, before this returns, and never if it rolls back: that is
 * how an event written in the transaction reaches live watchers only once it is durable.
 *
 * Nested calls run as a savepoint of the outer transaction; their after-commit work waits for the
 * outermost commit and is dropped if the savepoint rolls back.
 */
export function writeTransaction<T>(db: Db, change: () => T): T {
  const outer = openWrites.get(db);
  if (outer) {
    const mark = outer.afterCommit.length;
    const undoMark = outer.onRollback.length;
    try {
      return db.transaction(change)();
    } catch (error) {
      outer.afterCommit.length = mark;
      undo(outer.onRollback.splice(undoMark));
      throw error;
    }
  }
  if (db.inTransaction) {
    // Its commit is out of our sight, so after-commit work could run too early or for a rollback.
    throw new Error("writeTransaction: a transaction not opened by writeTransaction is already open");
  }
  for (const hook of beforeWriteHooks.get(db) ?? []) hook();
  const open: OpenWrite = { afterCommit: [], onRollback: [] };
  openWrites.set(db, open);
  let result: T;
  try {
    result = db.transaction(change).immediate();
  } catch (error) {
    undo(open.onRollback);
    throw error;
  } finally {
    openWrites.delete(db);
  }
  for (const work of open.afterCommit) work();
  return result;
}

/**
 * Runs `undo` if the write transaction (or the savepoint) open on `db` rolls back, newest first: for
 * in-memory state that follows the rows, e.g. the event log's last id, so a rolled-back insert's id
 * is given again and every replica numbers the same events alike. Outside `writeTransaction` this is
 * a programming error.
 */
export function onRollback(db: Db, undo: () => void): void {
  const open = openWrites.get(db);
  if (!open) throw new Error("onRollback: no writeTransaction is open on this connection");
  open.onRollback.push(undo);
}

function undo(work: readonly (() => void)[]): void {
  for (let i = work.length - 1; i >= 0; i--) work[i]?.();
}

/** True while `writeTransaction` runs on this connection. */
export function inWriteTransaction(db: Db): boolean {
  return openWrites.has(db);
}

/**
 * Runs `work` after the write transaction open on `db` commits (in registration order); never if it
 * rolls back. `work` must not throw: the change is already committed. Outside `writeTransaction` this
 * is a programming error.
 */
export function afterCommit(db: Db, work: () => void): void {
  const open = openWrites.get(db);
  if (!open) throw new Error("afterCommit: no writeTransaction is open on this connection");
  open.afterCommit.push(work);
}
