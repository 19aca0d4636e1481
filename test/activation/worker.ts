/**
 * Child process for the concurrency test: activates names one call at a time in one session on a
 * shared SQLite file and prints the names this process newly activated. Not a test file itself.
 */
import { ActivationStore, activationMigrations } from "../../src/activation/index.ts";
import { ANONYMOUS_CALLER } from "../../src/caller/caller.ts";
import { openDatabase } from "../../src/database/sqlite.ts";

const [file, sessionId, namesJson, startAt] = process.argv.slice(2);
if (file === undefined || sessionId === undefined || namesJson === undefined) {
  throw new Error("usage: file session names [startAtMs]");
}
const db = openDatabase(file, activationMigrations);
const store = new ActivationStore(db, { runActivationTtlSeconds: 60 });
const who = { ...ANONYMOUS_CALLER, tenantId: "acme", sessionId, runId: `run-${process.pid}` };
const names = JSON.parse(namesJson) as string[];
const mine: string[] = [];
// Start together so the writes really interleave despite uneven process start-up.
const wait = Number(startAt ?? 0) - Date.now();
if (wait > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait);
for (const name of names) {
  const { activated } = await store.activate(who, [name], {
    scope: "session",
    source: "explicit",
    reason: "test",
  });
  mine.push(...activated);
}
db.close();
process.stdout.write(JSON.stringify(mine));
