import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CHANGE_LOG_MIGRATIONS,
  ChangeLog,
  listenForChanges,
  migratePostgres,
} from "../../src/replication/change-log.ts";
import { postgresUnavailable, startPostgres, type TestPostgres } from "../support/postgres.ts";

// Issue 17 step 1 (docs/replicas.md): the change log on a real PostgreSQL server started for this file.
const unavailable = postgresUnavailable();

const title = `the change log on PostgreSQL${unavailable ? ` (skipped: ${unavailable})` : ""}`;

describe.skipIf(unavailable !== undefined)(title, () => {
  let server: TestPostgres;
  let pool: pg.Pool;
  let log: ChangeLog;

  beforeAll(async () => {
    server = await startPostgres();
    pool = new pg.Pool({ connectionString: server.url, max: 20 });
    log = await ChangeLog.open(pool);
  }, 60_000);
  afterAll(async () => {
    await pool?.end();
    await server?.stop();
  });

  /** Every change after `from`, page by page. */
  async function readAll(from: number): Promise<number[]> {
    const seqs: number[] = [];
    for (let last = from; ; ) {
      const page = await log.after(last, 100);
      if (page.length === 0) return seqs;
      for (const change of page) seqs.push(change.seq);
      last = page.at(-1)?.seq ?? last;
    }
  }

  it("numbers changes 1, 2, 3 … and returns them in order with what they carry", async () => {
    const start = await log.head();
    const seqs = await log.append([
      { kind: "usage.recorded", tenantId: "acme", payload: { key: "k1", tokens: 12 } },
      { kind: "tool.activated", tenantId: "", payload: { tool: "github.create_issue" } },
    ]);
    expect(seqs).toEqual([start + 1, start + 2]);
    const changes = await log.after(start, 10);
    expect(changes.map(({ seq, kind, tenantId, payload }) => ({ seq, kind, tenantId, payload }))).toEqual([
      { seq: start + 1, kind: "usage.recorded", tenantId: "acme", payload: { key: "k1", tokens: 12 } },
      { seq: start + 2, kind: "tool.activated", tenantId: "", payload: { tool: "github.create_issue" } },
    ]);
    expect(await log.head()).toBe(start + 2);
  });

  it("stores U+0000 in a payload's text as U+FFFD (jsonb cannot hold it), and an escaped backslash as it was", async () => {
    const start = await log.head();
    await log.append([
      { kind: "tool.searched", tenantId: "acme", payload: { query: "a\u0000b", raw: "c\\u0000d" } },
    ]);
    const [change] = await log.after(start, 1);
    expect(change?.payload).toEqual({ query: "a\uFFFDb", raw: "c\\u0000d" });
  });

  it("lets a reader that follows concurrent appenders see every change once, in order, with no gap", async () => {
    const start = await log.head();
    const appenders = 8;
    const each = 40;
    let done = false;
    const seen: number[] = [];
    // The follower reads while the appenders commit: a seq it passed must never commit later.
    const follower = (async () => {
      for (let last = start; !done || last < start + appenders * each; ) {
        for (const change of await log.after(last, 50)) {
          seen.push(change.seq);
          last = change.seq;
        }
      }
    })();
    await Promise.all(
      Array.from({ length: appenders }, async (_, a) => {
        for (let i = 0; i < each; i++)
          await log.append([{ kind: "test", tenantId: `t${a}`, payload: { a, i } }], async (client) => {
            // Work inside the change's transaction, so commits interleave with other appends.
            await client.query("SELECT pg_sleep(0.001)");
            return [];
          });
      }),
    );
    done = true;
    await follower;
    expect(seen).toEqual(Array.from({ length: appenders * each }, (_, i) => start + i + 1));
  }, 60_000);

  it("appends nothing when the work inside its transaction fails", async () => {
    const start = await log.head();
    await expect(
      log.append([{ kind: "test", tenantId: "", payload: {} }], async (client) => {
        await client.query("SELECT 1/0");
        return [];
      }),
    ).rejects.toThrow(/division by zero/);
    expect(await log.head()).toBe(start);
    expect(await readAll(start)).toEqual([]);
  });

  it("wakes a listener on each commit, and once on connecting for what it may have missed", async () => {
    let wakes = 0;
    const stop = await listenForChanges({ connectionString: server.url }, () => {
      wakes++;
    });
    try {
      expect(wakes).toBe(1);
      await log.append([{ kind: "test", tenantId: "", payload: { wake: true } }]);
      const deadline = Date.now() + 5_000;
      while (wakes < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(wakes).toBe(2);
    } finally {
      await stop();
    }
  });

  it("migrates once however many replicas open the log at the same time", async () => {
    const pools = Array.from({ length: 3 }, () => new pg.Pool({ connectionString: server.url, max: 2 }));
    try {
      const applied = await Promise.all(pools.map((p) => migratePostgres(p, CHANGE_LOG_MIGRATIONS)));
      expect(applied.flat()).toEqual([]);
      const { rows } = await pool.query("SELECT id FROM wayfind_schema_migrations ORDER BY id");
      expect(rows.map((row: { id: string }) => row.id)).toEqual(CHANGE_LOG_MIGRATIONS.map((m) => m.id));
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});
