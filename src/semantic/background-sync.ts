import type { SyncReport, TextVectors, ToolText } from "./vectors.ts";

/** Quiet time after a change before vectors are brought up to date (changes come in bursts). */
const SYNC_DELAY_MS = 250;

export interface BackgroundSyncOptions {
  /** After each sync that was not superseded: how many vectors were reused, embedded and removed. */
  readonly onSynced?: (report: SyncReport) => void;
  readonly onSyncError?: (error: unknown) => void;
}

/**
 * Keeps a vector store in step with its records: a sync runs a short quiet time after the last
 * change, one at a time, always for the newest records (the embedding itself runs in the embedder's
 * worker thread).
 */
export class BackgroundSync {
  private timer: NodeJS.Timeout | undefined;
  private records: (() => readonly ToolText[]) | undefined;
  private running: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly vectors: TextVectors,
    private readonly options: BackgroundSyncOptions = {},
  ) {}

  /** The records changed; `records` lists them as they are now (read when the sync starts). */
  changed(records: () => readonly ToolText[]): void {
    this.records = records;
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.start(), SYNC_DELAY_MS);
    this.timer.unref();
  }

  /** Resolves when the newest records all have their vectors (tests, benches). */
  async settled(): Promise<void> {
    while (this.timer !== undefined || this.running !== undefined) {
      if (this.timer !== undefined) {
        clearTimeout(this.timer);
        this.start();
      }
      await this.running;
    }
  }

  /**
   * Stops scheduling. A sync under way ends when its embedder is closed (its errors are then not
   * reported); the returned promise settles when it has.
   */
  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    return this.running ?? Promise.resolve();
  }

  private start(): void {
    this.timer = undefined;
    const records = this.records;
    if (!records || this.closed) return;
    if (this.running) {
      // One sync at a time: the newest records are synced when this one ends.
      void this.running.then(() => this.changed(this.records ?? records));
      return;
    }
    this.running = this.vectors.sync(records()).then(
      (report) => {
        if (!report.superseded) this.options.onSynced?.(report);
      },
      (error: unknown) => {
        if (!this.closed) this.options.onSyncError?.(error);
      },
    );
    void this.running.finally(() => {
      this.running = undefined;
    });
  }
}
