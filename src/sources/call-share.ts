/**
 * A tenant's share of one MCP server, whichever of its connections a request takes (the tenant's
 * own, or one of a session's: mcp-sources.ts): `max_concurrent_calls` slots, waited for in order,
 * and the breaker, so a slow or dead server, or another tenant's traffic, costs a tenant's requests
 * nothing but a clear error of their own.
 */
import type { McpServerConfig } from "../config/index.ts";
import { RetryLaterError, WayfindError } from "../errors.ts";

/** Requests that may wait for a server's slots; more are refused at once. */
const MAX_QUEUED = 1_000;

export class CallShare {
  private inFlight = 0;
  /** Requests waiting for a slot, first come first served. */
  private readonly queue: (() => void)[] = [];
  private failuresInRow = 0;
  private openUntil = 0;

  constructor(
    private readonly config: McpServerConfig,
    private readonly onBreakerOpen: (openMs: number) => void,
  ) {}

  /** Requests holding a slot now. */
  get busy(): number {
    return this.inFlight;
  }

  /** Refuses at once while the breaker is open (RESOURCE_EXHAUSTED with when to retry). */
  checkBreaker(now: number): void {
    if (now < this.openUntil)
      throw new RetryLaterError(
        `MCP server "${this.config.name}" failed ${this.config.breakerFailures} calls in a row ` +
          "(mcp_servers[].breaker.failures); " +
          `its calls are refused for ${Math.ceil((this.openUntil - now) / 1000)} s more, then tried again`,
        this.openUntil - now,
      );
  }

  /**
   * One of the server's `max_concurrent_calls` slots: at once when one is free, else after the
   * requests queued before this one (in order), within `deadline` and while `signal` is not aborted.
   */
  slot(what: string, deadline: number, signal: AbortSignal, cancelled: () => WayfindError): Promise<void> {
    if (this.inFlight < this.config.maxConcurrentCalls) {
      this.inFlight++;
      return Promise.resolve();
    }
    if (this.queue.length >= MAX_QUEUED)
      return Promise.reject(
        new RetryLaterError(
          `MCP server "${this.config.name}" has ${this.inFlight} calls in flight (mcp_servers[].max_concurrent_calls) ` +
            `and ${this.queue.length} waiting; try again shortly`,
          1_000,
        ),
      );
    return new Promise<void>((resolve, reject) => {
      const leave = (error: WayfindError) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        const index = this.queue.indexOf(start);
        if (index >= 0) this.queue.splice(index, 1);
        reject(error);
      };
      const onAbort = () => leave(cancelled());
      const timer = setTimeout(
        () =>
          leave(
            new WayfindError(
              "deadline_exceeded",
              `${what} waited its whole timeout for one of MCP server "${this.config.name}"'s ` +
                `${this.config.maxConcurrentCalls} call slots (mcp_servers[].max_concurrent_calls)`,
            ),
          ),
        Math.max(0, deadline - Date.now()),
      );
      const start = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.queue.push(start);
    });
  }

  /** Frees a slot: the first queued request takes it over, or it is free. */
  release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.inFlight--;
  }

  succeeded(): void {
    this.failuresInRow = 0;
  }

  /** A failure that counts against the server (unreachable, timed out): enough in a row open the breaker. */
  failed(): void {
    this.failuresInRow++;
    if (this.failuresInRow < this.config.breakerFailures) return;
    const openMs = this.config.breakerOpenSeconds * 1000;
    this.openUntil = Date.now() + openMs;
    this.failuresInRow = 0;
    this.onBreakerOpen(openMs);
  }
}
