/**
 * The replicas' change log (issue 17, docs/replicas.md) on a real PostgreSQL started for the run:
 * appends are numbered under one advisory lock, so the whole fleet appends one at a time — how many
 * appends per second is that, and at what latency, with 1, 8 and 32 appenders in flight? Also: how
 * fast a follower applies the log into a SQLite copy, and what a read fence costs when there is
 * nothing to apply (the cost every replicated read would pay).
 *
 * Usage: node --import tsx bench/change-log.ts [--seconds S] [--fsync]
 *   --seconds S  per row (default 5); --fsync: the server flushes each commit (default off, as in tests)
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { openDatabase } from "../src/database/sqlite.ts";
import { ChangeLog } from "../src/replication/change-log.ts";
import { FOLLOWER_MIGRATIONS, Follower } from "../src/replication/follower.ts";
import { startPostgres } from "../test/support/postgres.ts";
import { printAligned } from "./lib/grpc-bench-support.ts";
import { percentile } from "./lib/stats.ts";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "5" }, fsync: { type: "boolean", default: false } },
  strict: true,
});
const SECONDS = Number(values.seconds);

const server = await startPostgres({ fsync: values.fsync });
const pool = new pg.Pool({ connectionString: server.url, max: 40 });
try {
  const log = await ChangeLog.open(pool);
  const payload = { tenant: "acme", key: "response-id-0123456789", input_tokens: 1200, output_tokens: 350 };
  const rows: string[][] = [];

  for (const inFlight of [1, 8, 32]) {
    const latencies: number[] = [];
    const until = performance.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (performance.now() < until) {
          const started = performance.now();
          await log.append([{ kind: "usage.recorded", tenantId: "acme", payload }]);
          latencies.push(performance.now() - started);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    rows.push([
      `append, ${inFlight} in flight`,
      (latencies.length / SECONDS).toFixed(0),
      percentile(latencies, 50).toFixed(2),
      percentile(latencies, 99).toFixed(2),
    ]);
  }

  const db = openDatabase(join(mkdtempSync(join(tmpdir(), "wayfind-bench-replica-")), "wayfind.db"), [
    ...FOLLOWER_MIGRATIONS,
    { id: "bench/001-usage", up: "CREATE TABLE usage (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL)" },
  ]);
  const insert = db.prepare("INSERT INTO usage (seq, payload) VALUES (?, ?)");
  const follower = new Follower({
    log,
    db,
    appliers: new Map([
      ["usage.recorded", (change) => insert.run(change.seq, JSON.stringify(change.payload))],
    ]),
    pageSize: 500,
  });
  const backlog = await log.head();
  let started = performance.now();
  await follower.catchUp();
  const applyMs = performance.now() - started;
  rows.push([`follower applies ${backlog} changes`, ((backlog / applyMs) * 1000).toFixed(0), "", ""]);

  const fences: number[] = [];
  started = performance.now();
  while (performance.now() - started < SECONDS * 1000) {
    const t = performance.now();
    await follower.fence();
    fences.push(performance.now() - t);
  }
  fences.sort((a, b) => a - b);
  rows.push([
    "read fence, nothing to apply",
    (fences.length / SECONDS).toFixed(0),
    percentile(fences, 50).toFixed(2),
    percentile(fences, 99).toFixed(2),
  ]);
  db.close();

  console.log(
    `PostgreSQL from ${server.binaries}; ${SECONDS} s per row; one small usage-like change per append\n`,
  );
  printAligned(["what", "per second", "p50 ms", "p99 ms"], rows, new Set([1, 2, 3]));
} finally {
  await pool.end();
  await server.stop();
}
