import { Worker } from "node:worker_threads";
import { workerEntry } from "../worker-entry.ts";
import type { Db } from "./sqlite.ts";

/** SQLite's default: a commit that grows the log past this many pages checkpoints it, inline. */
const AUTOCHECKPOINT_PAGES = 1000;
/** Past this size the worker also truncates the log (see checkpoint-worker.ts). */
const TRUNCATE_WAL_BYTES = 16 * 1024 * 1024;

/**
 * Moves write-ahead-log checkpoints off the event loop. By default the commit that grows the WAL past
 * 1,000 pages copies it back into the database file itself, inline: inside a large RegisterTools,
 * on the event loop, for as long as the copy takes. Here the server's connection checkpoints nothing
 * and a worker thread with its own connection runs a PASSIVE checkpoint every `intervalMs`, and
 * truncates the log once it is past 16 MiB (under steady commits a PASSIVE checkpoint alone never
 * lets it reset). If the worker dies, the connection checkpoints inline again, so the log never grows
 * without bound.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private stopped = false;

  constructor(
    private readonly db: Db,
    file: string,
    options: { intervalMs?: number; onError?: (message: string) => void } = {},
  ) {
    db.pragma("wal_autocheckpoint = 0");
    this.worker = new Worker(workerEntry(import.meta.url, "checkpoint-worker"), {
      workerData: { file, intervalMs: options.intervalMs ?? 1_000, truncateBytes: TRUNCATE_WAL_BYTES },
    });
    this.worker.unref();
    this.worker.on("message", (message: { error?: string }) => {
      if (message.error) options.onError?.(message.error);
    });
    const fallBack = () => {
      if (!this.stopped && this.db.open) this.db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    };
    this.worker.on("error", (error) => {
      options.onError?.(error.message);
      fallBack();
    });
    this.worker.on("exit", fallBack);
  }

  /** Stops the worker (before the server's connection closes) and restores inline checkpoints. */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const exited = new Promise((resolve) => this.worker.once("exit", resolve));
    // Referenced while it stops: an unreferenced worker's exit does not keep the loop alive, so a
    // process with nothing else left (a start that failed) would end here without its error.
    this.worker.ref();
    this.worker.postMessage("stop");
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]);
    clearTimeout(timer);
    await this.worker.terminate();
    if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  }
}
