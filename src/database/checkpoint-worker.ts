// The worker thread that checkpoints a database's write-ahead log (WalCheckpointer). workerData:
// { file, intervalMs, truncateBytes }. Its own connection.
//
// A PASSIVE checkpoint never waits for readers or writers, but under a steady stream of commits it
// never catches up either: frames committed while it copies keep the log from being reset, and the
// file grew by steps, without bound, in a soak under steady calls. So once the file is past
// `truncateBytes`, a TRUNCATE checkpoint follows the PASSIVE one: it copies the few frames committed
// since, then empties the file. It is tried without waiting (busy timeout 0): when a reader or a
// writer is active it gives up and the next tick tries again; the server's writers wait at most for
// that short copy.

import { statSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

const { file, intervalMs, truncateBytes } = workerData as {
  file: string;
  intervalMs: number;
  truncateBytes: number;
};
const db = new Database(file);

function walBytes(): number {
  try {
    return statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}

const timer = setInterval(() => {
  try {
    db.pragma("busy_timeout = 5000");
    db.pragma("wal_checkpoint(PASSIVE)");
    if (walBytes() > truncateBytes) {
      db.pragma("busy_timeout = 0");
      db.pragma("wal_checkpoint(TRUNCATE)");
    }
  } catch (error) {
    parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
}, intervalMs);
parentPort?.on("message", (message: unknown) => {
  if (message !== "stop") return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
