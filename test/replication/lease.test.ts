import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HeldLease, holdLease } from "../../src/replication/lease.ts";
import { postgresUnavailable, startPostgres, type TestPostgres } from "../support/postgres.ts";

// Issue 17 item 6 (docs/replicas.md "MCP sources"): one replica at a time holds a job's lease, and
// another takes it over when the holder dies. Real PostgreSQL.
const unavailable = postgresUnavailable();
const title = `a lease${unavailable ? ` (skipped: ${unavailable})` : ""}`;

async function until(condition: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return condition();
}

describe.skipIf(unavailable !== undefined)(title, () => {
  let server: TestPostgres;
  let pool: pg.Pool;

  beforeAll(async () => {
    server = await startPostgres();
    pool = new pg.Pool({ connectionString: server.url, max: 2 });
  }, 60_000);
  afterAll(async () => {
    await pool?.end();
    await server?.stop();
  });

  /** Three replicas contending for one lease; each records when it acquires and loses it. */
  function contenders(name: string) {
    const log: string[] = [];
    const leases: HeldLease[] = ["a", "b", "c"].map((replica) =>
      holdLease({ connectionString: server.url }, name, {
        retryMs: 50,
        onAcquired: () => log.push(`${replica} acquired`),
        onLost: () => log.push(`${replica} lost`),
      }),
    );
    const holders = () => leases.filter((lease) => lease.held);
    return { log, leases, holders, stopAll: () => Promise.all(leases.map((lease) => lease.stop())) };
  }

  it("is held by exactly one replica at a time", async () => {
    const { holders, stopAll } = contenders("mcp:github");
    try {
      expect(await until(() => holders().length === 1)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(holders()).toHaveLength(1);
    } finally {
      await stopAll();
    }
  });

  it("is taken again when the holder's session dies (as on kill -9), and the holder learns it lost it", async () => {
    const { log, leases, holders, stopAll } = contenders("mcp:slack");
    try {
      expect(await until(() => holders().length === 1)).toBe(true);
      const first = ["a", "b", "c"][leases.findIndex((lease) => lease.held)];
      // As a kill -9 of the holder would: its session ends, and PostgreSQL frees the lock.
      await pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid IS NOT NULL",
      );
      // Whoever tries next takes it: usually another contender, whose session is already open; the
      // old holder, reconnecting, may win too (a dead replica would not). The MCP suite kills one.
      expect(await until(() => log.includes(`${first} lost`) && holders().length === 1)).toBe(true);
      expect(log.filter((entry) => entry.endsWith("acquired"))).toHaveLength(2);
    } finally {
      await stopAll();
    }
  });

  it("passes on when the holder stops checking in, as a frozen process does, and tells it once it runs again", async () => {
    const log: string[] = [];
    const connection = { connectionString: server.url };
    // Checks in once a minute: frozen, as far as the 300 ms idle timeout can tell.
    const frozen = holdLease(connection, "mcp:frozen", {
      retryMs: 60_000,
      idleTimeoutMs: 300,
      onAcquired: () => log.push("frozen acquired"),
      onLost: () => log.push("frozen lost"),
    });
    await frozen.ready;
    const waiting = holdLease(connection, "mcp:frozen", {
      retryMs: 50,
      onAcquired: () => log.push("waiting acquired"),
      onLost: () => log.push("waiting lost"),
    });
    try {
      expect(await until(() => waiting.held)).toBe(true);
      expect(frozen.held).toBe(false);
      // The lost and the acquired can arrive in either order: two connections.
      expect([...log].sort()).toEqual(["frozen acquired", "frozen lost", "waiting acquired"]);
    } finally {
      await Promise.all([frozen.stop(), waiting.stop()]);
    }
  });

  it("passes on when the holder stops, and leases of different names do not exclude each other", async () => {
    const github = contenders("mcp:jira");
    const notion = contenders("mcp:notion");
    try {
      expect(await until(() => github.holders().length === 1 && notion.holders().length === 1)).toBe(true);
      const holder = github.holders()[0] as HeldLease;
      await holder.stop();
      expect(await until(() => github.holders().length === 1 && github.holders()[0] !== holder)).toBe(true);
    } finally {
      await Promise.all([github.stopAll(), notion.stopAll()]);
    }
  });
});
