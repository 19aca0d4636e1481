// The worker thread that takes a snapshot of a replica's copy (takeSnapshot in snapshots.ts).
// workerData: { file, into }. Its own read-only connection: VACUUM INTO reads one
// consistent state of the copy however large it is, while the server's connection goes on applying
// changes, and the event loop never waits for it.

import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { readAppliedSeq } from "./follower.ts";

const { file, into } = workerData as { file: string; into: string };

try {
  const source = new Database(file, { readonly: true, fileMustExist: true });
  try {
    source.prepare("VACUUM INTO ?").run(into);
  } finally {
    source.close();
  }
  const snapshot = new Database(into);
  try {
    // One self-contained file.
    snapshot.pragma("journal_mode = DELETE");
    parentPort?.postMessage({ seq: readAppliedSeq(snapshot) });
  } finally {
    snapshot.close();
  }
} catch (error) {
  parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) });
}
