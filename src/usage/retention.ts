import type { UsageLedger } from "./ledger.ts";

export interface UsageRetentionOptions {
  /** How often to look for expired records (default 60 s). */
  readonly intervalMs?: number;
  /** A failed batch is reported here and retried on the next tick; it never reaches a request. */
  readonly onError: (error: unknown) => void;
}

/**
 * Runs the ledger's retention off the request path: on a timer, one short batch per event-loop turn
 * until nothing expired is left (a backlog, e.g. after downtime, drains without holding the loop).
 * Returns a function that stops it.
 */
export function startUsageRetention(ledger: UsageLedger, options: UsageRetentionOptions): () => void {
  let stopped = false;
  let running = false;
  const step = () => {
    if (stopped) {
      running = false;
      return;
    }
    let more = false;
    try {
      more = ledger.pruneExpired().more;
    } catch (error) {
      options.onError(error);
    }
    if (more) setImmediate(step);
    else running = false;
  };
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    step();
  }, options.intervalMs ?? 60_000);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
