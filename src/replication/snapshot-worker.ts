// The worker thread that takes a snapshot of a replica's copy (takeSnapshot in snapshots.ts).
// workerData: { file, into, localTables }. Its own read-only connection: VACUUM INTO reads one
// consistent state of the copy however large it is, while the server's connection goes on applying
// changes, and the event loop never waits for it.

import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { readAppliedSeq } from "./follower.ts";

const { file, into, localTables } = workerData as { file: string; into: string; localTables: string[] };

try {
  const source = new Database(file, { readonly: true, fileMustExist: true });
  try {
    source.prepare("VACUUM INTO ?").run(into);
  } finally {
    source.close();
  }
  const snapshot = new Database(into);
  try {
    // One self-contained file, and the rows of tables that belong to this data dir only (API keys of
    // `wayfind keys create`) overwritten, not merely unlinked, before the file leaves the machine.
    snapshot.pragma("journal_mode = DELETE");
    snapshot.pragma("secure_delete = ON");
    for (const table of localTables) snapshot.exec(`DELETE FROM "${table}"`);
    parentPort?.postMessage({ seq: readAppliedSeq(snapshot) });
  } finally {
    snapshot.close();
  }
} catch (error) {
  parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) });
}
