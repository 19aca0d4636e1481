// The worker thread that checkpoints a database's write-ahead log (WalCheckpointer). workerData:
// { file, intervalMs }. Its own connection; a PASSIVE checkpoint never waits for readers or writers.

import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new Database(file);
db.pragma("busy_timeout = 5000");
const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
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
