import pg from "pg";

/**
 * A lease on a named job (e.g. syncing one MCP server) that at most one replica holds at a time
 * (docs/replicas.md "MCP sources"): a PostgreSQL session advisory lock on a connection of its own.
 * PostgreSQL releases it when that connection ends, so a replica that dies (kill -9, lost network)
 * loses its leases without anyone cleaning up, and another replica takes them on its next attempt.
 */
export interface LeaseOptions {
  /** How often a replica without the lease tries again, and checks it still holds it (default 5 s). */
  readonly retryMs?: number;
  /**
   * A holder that has not checked in for this long loses the lease (default 3 × retryMs, at least
   * 5 s, so a busy event loop does not lose it between two checks): PostgreSQL
   * ends its idle session (`idle_session_timeout`, PostgreSQL 14+). A frozen process (SIGSTOP, a
   * paused VM) keeps its TCP connection alive, so without this it would hold the lease for good.
   */
  readonly idleTimeoutMs?: number;
  /** The lease was taken: start the job. */
  readonly onAcquired: () => void;
  /** The lease was lost (its connection ended): stop the job; another replica may hold it now. */
  readonly onLost: () => void;
  readonly onError?: (error: Error) => void;
}

export interface HeldLease {
  /** Whether this replica holds the lease now. */
  readonly held: boolean;
  /** Settles after the first attempt, taken or not (onAcquired has run when it was taken). */
  readonly ready: Promise<void>;
  /** Gives the lease up (if held) and stops trying. */
  stop(): Promise<void>;
}

const MIN_IDLE_TIMEOUT_MS = 5_000;
/** SQLSTATE of an unknown configuration parameter. */
const UNDEFINED_OBJECT = "42704";

/** Keeps trying to hold the lease `name` until stopped. */
export function holdLease(connection: pg.ClientConfig, name: string, options: LeaseOptions): HeldLease {
  const retryMs = options.retryMs ?? 5_000;
  const idleTimeoutMs = Math.round(options.idleTimeoutMs ?? Math.max(MIN_IDLE_TIMEOUT_MS, 3 * retryMs));
  let client: pg.Client | undefined;
  let held = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let firstAttempt: () => void = () => {};
  const ready = new Promise<void>((resolve) => (firstAttempt = resolve));

  const lose = (lost: pg.Client) => {
    if (client !== lost) return;
    client = undefined;
    lost.end().catch(() => undefined);
    if (held) {
      held = false;
      options.onLost();
    }
  };

  const attempt = async () => {
    if (stopped) return;
    try {
      if (client === undefined) {
        const next = new pg.Client(connection);
        next.on("error", (error) => {
          options.onError?.(error);
          lose(next);
        });
        next.on("end", () => lose(next));
        await next.connect();
        await next.query(`SET idle_session_timeout = ${idleTimeoutMs}`).catch((error: { code?: string }) => {
          // PostgreSQL 13 has no idle_session_timeout: a frozen holder keeps its lease there.
          if (error.code !== UNDEFINED_OBJECT) throw error;
        });
        client = next;
      }
      const current = client;
      if (held) {
        // The lock lives as long as the session: a query that answers means it is still ours.
        await current.query("SELECT 1");
        return;
      }
      // hashtextextended: a 64-bit key per name, in the namespace of wayfind's leases.
      const { rows } = await current.query<{ locked: boolean }>(
        "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked",
        [`wayfind:lease:${name}`],
      );
      if (rows[0]?.locked === true && !stopped) {
        held = true;
        options.onAcquired();
      }
    } catch (error) {
      options.onError?.(error as Error);
      if (client !== undefined) lose(client);
    } finally {
      firstAttempt();
      if (!stopped) timer = setTimeout(attempt, retryMs);
    }
  };
  void attempt();

  return {
    get held() {
      return held;
    },
    ready,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const last = client;
      client = undefined;
      held = false;
      // Ending the session releases its advisory locks.
      await last?.end().catch(() => undefined);
    },
  };
}
