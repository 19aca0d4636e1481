/**
 * `wayfind storage copy-to-postgres` (docs/replicas.md "From one server to a fleet"): how long moving a
 * server's data folder onto a new PostgreSQL database takes, and the command's memory, as the ledger
 * and the event log grow. Each size: a data folder made by the server's own migrations and filled with
 * --usage usage records (20 tenants over 30 days, with their daily, hourly and per-minute sums) and
 * --events events, then the command as a user runs it (`node bin/wayfind.js`, a process of its own),
 * then a check that every tenant's daily sums on PostgreSQL equal the data folder's.
 *
 * Starts its own PostgreSQL (test/support/postgres.ts). Reads nothing outside the repository.
 * Usage: node --import tsx bench/copy-to-postgres.ts [--usage N,N] [--events N]
 */
import { readFileSync, rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { openDatabase } from "../src/database/sqlite.ts";
import { allMigrations } from "../src/server/migrations.ts";
import { runCli } from "../test/support/cli.ts";
import { startPostgres } from "../test/support/postgres.ts";
import { printAligned } from "./lib/grpc-bench-support.ts";

const { values } = parseArgs({
  options: {
    usage: { type: "string", default: "20000,200000" },
    events: { type: "string", default: "50000" },
  },
});
const SIZES = values.usage.split(",").map(Number);
const EVENTS = Number(values.events);
const DAY_MS = 86_400_000;
const PERIODS = { usage_daily: DAY_MS, usage_hourly: 3_600_000, usage_minutely: 60_000 };

/** A data folder holding `records` usage records and EVENTS events, as a server would have left it. */
async function dataFolder(records: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wayfind-bench-copy-"));
  const db = openDatabase(join(dir, "wayfind.db"), allMigrations);
  const now = Date.now();
  db.exec(`WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < ${records})
    INSERT INTO usage_records (tenant_id, idempotency_key, request_json, project_id, user_id, session_id,
      run_id, provider, model, input_tokens, output_tokens, cache_read_input_tokens,
      cache_creation_input_tokens, cache_creation_1h_input_tokens, rate_limit_input_tokens, cost_usd,
      uncached_cost_usd, unknown_cost_reason, occurred_at_ms, recorded_at_ms)
    SELECT 'tenant-' || (x % 20), 'call-' || x, '{}', 'project-' || (x % 5), 'user-' || (x % 50),
      'session-' || (x % 1000), 'run-' || (x % 3000), 'anthropic', 'claude-sonnet-4-5', 1000 + x % 100, 100,
      500, 0, 0, 1500, 0.01, 0.02, NULL, ${now} - x * 13000 % (30 * ${DAY_MS}), ${now} - x * 13000 % (30 * ${DAY_MS})
    FROM i`);
  for (const [table, period] of Object.entries(PERIODS))
    db.exec(`INSERT INTO ${table} SELECT tenant_id, occurred_at_ms - ((occurred_at_ms % ${period}) + ${period}) % ${period},
      provider, model, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_input_tokens),
      SUM(cache_creation_input_tokens), SUM(cache_creation_1h_input_tokens), SUM(rate_limit_input_tokens),
      TOTAL(cost_usd), SUM(cost_usd IS NULL), TOTAL(uncached_cost_usd) FROM usage_records GROUP BY 1, 2, 3, 4`);
  db.exec(`WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < ${EVENTS})
    INSERT INTO events (ts_ms, type, tenant_id, attributes)
    SELECT ${now} - x * 1000, 'tool_search', 'tenant-' || (x % 20), '{"query":"find an invoice","result_count":3}' FROM i`);
  db.close();
  return dir;
}

/** Runs the command, sampling its peak resident memory (VmHWM) until it exits. */
async function copy(dataDir: string, databaseUrl: string) {
  const started = performance.now();
  const run = runCli(["storage", "copy-to-postgres", "--data-dir", dataDir], {
    WAYFIND_DATABASE_URL: databaseUrl,
  });
  const stdout: string[] = [];
  run.child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk.toString()));
  let peakKib = 0;
  const sample = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${run.child.pid}/status`, "utf8"))?.[1];
      peakKib = Math.max(peakKib, Number(hwm ?? 0));
    } catch {
      // exited between two samples
    }
  }, 20);
  const code = await run.exited;
  clearInterval(sample);
  if (code !== 0) throw new Error(`copy-to-postgres exited ${code}: ${run.stderr.join("")}`);
  return { seconds: (performance.now() - started) / 1000, peakMb: peakKib / 1024, report: stdout.join("") };
}

/** Whether every tenant's calls and input tokens per day on PostgreSQL equal the data folder's. */
async function sameDailySums(dataDir: string, pool: pg.Pool): Promise<boolean> {
  const db = openDatabase(join(dataDir, "wayfind.db"), allMigrations);
  const local = db
    .prepare<[], { key: string }>(
      "SELECT tenant_id || '/' || occurred_at_ms || '/' || calls || '/' || input_tokens AS key FROM usage_daily ORDER BY 1",
    )
    .all()
    .map((row) => row.key);
  db.close();
  const { rows } = await pool.query<{ key: string }>(
    `SELECT tenant_id || '/' || occurred_at_ms || '/' || sum(calls) || '/' || sum(input_tokens) AS key
     FROM wayfind_usage_rollup_daily GROUP BY tenant_id, occurred_at_ms ORDER BY 1`,
  );
  return JSON.stringify(local) === JSON.stringify(rows.map((row) => row.key));
}

const postgres = await startPostgres();
const HEADER = ["usage records", "events", "copy (s)", "records/s", "peak RSS (MB)", "daily sums equal"];
const lines: string[][] = [];
try {
  for (const [i, size] of SIZES.entries()) {
    const dataDir = await dataFolder(size);
    const database = `copy_${i}`;
    const admin = new pg.Pool({ connectionString: postgres.url, max: 1 });
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    const url = postgres.url.replace(/\/[^/]*$/, `/${database}`);
    const { seconds, peakMb, report } = await copy(dataDir, url);
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const equal = await sameDailySums(dataDir, pool);
    await pool.end();
    process.stdout.write(report);
    lines.push([
      String(size),
      String(EVENTS),
      seconds.toFixed(1),
      Math.round(size / seconds).toLocaleString("en"),
      peakMb.toFixed(0),
      equal ? "yes" : "NO",
    ]);
    rmSync(dataDir, { recursive: true, force: true });
  }
} finally {
  await postgres.stop();
}
printAligned(HEADER, lines, new Set([0, 1, 2, 3, 4]));
