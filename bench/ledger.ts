/**
 * The usage ledger of replicas on PostgreSQL (issue 32, docs/replicas.md "The usage ledger"): what a
 * fleet records per second, what a replica keeps of it, and what a summary over a month costs.
 *
 * - The write path's capacity with 1, 2 and 3 replicas on one PostgreSQL (fsync on): each replica a
 *   process of its own (bench/lib/ledger-driver.ts: a real Replica and PostgresLedger, no RPC front),
 *   new keys, then 10 % retries of acknowledged keys; retries must answer `duplicate` and count
 *   once (checked against the rows in PostgreSQL).
 * - RecordUsage over gRPC with 1, 2 and 3 `wayfind serve` replicas (ghz, new key per call).
 * - A replica's copy, its snapshot (VACUUM INTO, as compaction stores it) and a new replica's time
 *   to serve, as the ledger grows to --records records (written through the write path).
 * - GetUsageSummary p50 / p99 over --summary-records records in PostgreSQL (the extra ones written
 *   by SQL with their rollups, spread over 30 days): a day, 30 days, grouped by model and by day.
 *
 * Starts its own PostgreSQL (test/support/postgres.ts); everything shares this machine's cores.
 *
 * Usage: node --import tsx bench/ledger.ts [--seconds S] [--records N] [--summary-records N]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import Database from "better-sqlite3";
import pg from "pg";
import { UsageGroupBy, UsageService } from "../gen/ts/wayfind/v1/usage_pb.ts";
import { startPostgres } from "../test/support/postgres.ts";
import {
  ensureGhz,
  prepareWayfind,
  printAligned,
  ROOT,
  runWithServerCpu,
  type ServerProcess,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";
import { percentile } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    records: { type: "string", default: "1000000" },
    "summary-records": { type: "string", default: "10000000" },
  },
});
const SECONDS = Number(values.seconds);
const RECORDS = Number(values.records);
const SUMMARY_RECORDS = Number(values["summary-records"]);
/** RecordUsage calls in flight per replica (the drivers), and over the fleet (ghz). */
const IN_FLIGHT = 96;
const TENANTS = 8;
const DAY_MS = 86_400_000;
const CONFIG = join(ROOT, "demo", "wayfind.yaml");

const scratch = mkdtempSync(join(tmpdir(), "wayfind-bench-ledger-"));
const started: ServerProcess[] = [];
const fmt = (n: number, digits = 1) => n.toLocaleString("en-US", { maximumFractionDigits: digits });
const mib = (bytes: number) => fmt(bytes / 2 ** 20, 1);

interface Replica {
  readonly server: ServerProcess;
  readonly dataDir: string;
  readonly usage: Client<typeof UsageService>;
}

async function startReplica(databaseUrl: string): Promise<Replica> {
  const dataDir = mkdtempSync(join(scratch, "data-"));
  const server = await spawnServer(wayfindServeArgs(CONFIG, dataDir), {
    logFile: join(scratch, `replica-${started.length}.log`),
    env: { WAYFIND_DATABASE_URL: databaseUrl },
  });
  started.push(server);
  const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.port}` });
  return { server, dataDir, usage: createClient(UsageService, transport) };
}

interface DriveResult {
  readonly calls: number;
  readonly newKeys: number;
  readonly duplicates: number;
  readonly errors: number;
  readonly p50: number;
  readonly p99: number;
  readonly seconds: number;
}

/** `writers` ledger-driver processes at once, each a replica recording with IN_FLIGHT calls in flight. */
async function drive(
  databaseUrl: string,
  writers: number,
  round: string,
  options: { seconds: number; retryShare: number; stopAt?: number },
): Promise<DriveResult[]> {
  return Promise.all(
    Array.from({ length: writers }, (_, i) => {
      const args = [
        "--import",
        "tsx",
        join(ROOT, "bench/lib/ledger-driver.ts"),
        databaseUrl,
        mkdtempSync(join(scratch, "writer-")),
        `${round}-w${i}`,
        String(options.seconds),
        String(IN_FLIGHT),
        String(TENANTS),
        String(options.retryShare),
        ...(options.stopAt === undefined ? [] : [String(Math.ceil(options.stopAt / writers))]),
      ];
      return new Promise<DriveResult>((resolve, reject) => {
        const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
        let out = "";
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          out += chunk;
        });
        child.once("exit", (code) => {
          const last = out.trim().split("\n").at(-1) ?? "";
          if (code === 0 && last.startsWith("{")) resolve(JSON.parse(last) as DriveResult);
          else reject(new Error(`ledger-driver exited ${code}: ${out.slice(-500)}`));
        });
      });
    }),
  );
}

async function countRows(client: pg.Client, where: string, params: unknown[]): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    `SELECT count(*) AS n FROM wayfind_usage_records WHERE ${where}`,
    params,
  );
  return Number(rows[0]?.n);
}

/** The copy's files (database and WAL) and its snapshot as compaction would store it (VACUUM INTO). */
function copySizes(replica: Replica): { copy: number; snapshot: number } {
  const file = join(replica.dataDir, "wayfind.db");
  const size = (path: string) => {
    try {
      return statSync(path).size;
    } catch {
      return 0;
    }
  };
  const into = join(scratch, `snapshot-${Date.now()}.db`);
  const db = new Database(file, { readonly: true });
  db.prepare("VACUUM INTO ?").run(into);
  db.close();
  const snapshot = size(into);
  rmSync(into, { force: true });
  return { copy: size(file) + size(`${file}-wal`), snapshot };
}

async function timeToServe(databaseUrl: string): Promise<{ ms: number; replica: Replica }> {
  const began = performance.now();
  const replica = await startReplica(databaseUrl);
  await replica.usage.getUsageSummary({ caller: { tenantId: "t0" } });
  return { ms: performance.now() - began, replica };
}

/**
 * Fills the ledger to `total` records for tenant "bulk" by SQL, spread over the last 29.5 days, with
 * their rollups: what months of RecordUsage would leave, without the months.
 */
async function bulkFill(client: pg.Client, total: number, nowMs: number): Promise<number> {
  const have = await countRows(client, "true", []);
  const add = Math.max(0, total - have);
  const span = Math.round(29.5 * DAY_MS);
  for (let day = 0; day <= 30; day++) {
    const start = Math.floor((nowMs - day * DAY_MS) / DAY_MS) * DAY_MS;
    const name = `wayfind_usage_records_${new Date(start).toISOString().slice(0, 10).replaceAll("-", "")}`;
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF wayfind_usage_records FOR VALUES FROM
       ('${new Date(start).toISOString().slice(0, 10)}') TO ('${new Date(start + DAY_MS).toISOString().slice(0, 10)}')`,
    );
  }
  const chunk = 1_000_000;
  for (let from = 0; from < add; from += chunk) {
    const to = Math.min(add, from + chunk);
    await client.query(
      `INSERT INTO wayfind_usage_records (tenant_id, idempotency_key, request_json, project_id, user_id,
         session_id, run_id, provider, model, input_tokens, output_tokens, cache_read_input_tokens,
         cache_creation_input_tokens, cache_creation_1h_input_tokens, rate_limit_input_tokens, cost_usd,
         uncached_cost_usd, unknown_cost_reason, occurred_at_ms, recorded_at_ms, recorded_on)
       SELECT 'bulk', 'bulk-' || g, '{}', 'p' || g % 4, 'u' || g % 50, 's' || g % 5000, 'r' || g % 20000,
         'anthropic', 'model-' || g % 5, 1000 + g % 500, 100, (g % 3) * 2000, 0, 0, 1000 + g % 500, 0.004,
         0.006, NULL, t, t, (to_timestamp(t / 1000.0) AT TIME ZONE 'UTC')::date
       FROM (SELECT g, ($1::bigint - ($2::bigint * g / $3::bigint)) AS t FROM generate_series($4::bigint, $5::bigint) AS g) AS s`,
      [nowMs, span, add, from + 1, to],
    );
  }
  for (const [table, period, who] of [
    ["wayfind_usage_rollup_daily", DAY_MS, "project_id, user_id, "],
    ["wayfind_usage_rollup_hourly", 3_600_000, ""],
    ["wayfind_usage_rollup_minutely", 60_000, ""],
  ] as const) {
    await client.query(
      `INSERT INTO ${table} (tenant_id, occurred_at_ms, ${who}provider, model, calls,
         input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens,
         cache_creation_1h_input_tokens, rate_limit_input_tokens, cost_usd, unknown_cost_calls, uncached_cost_usd)
       SELECT tenant_id, occurred_at_ms - occurred_at_ms % ${period}, ${who}provider, model,
         count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_input_tokens),
         sum(cache_creation_input_tokens), sum(cache_creation_1h_input_tokens), sum(rate_limit_input_tokens),
         sum(cost_usd), 0, sum(uncached_cost_usd)
       FROM wayfind_usage_records WHERE tenant_id = 'bulk' GROUP BY ${who}1, 2, provider, model
       ON CONFLICT DO NOTHING`,
    );
  }
  await client.query("ANALYZE");
  return add;
}

async function summaryLatency(
  replica: Replica,
  label: string,
  request: () => Parameters<Client<typeof UsageService>["getUsageSummary"]>[0],
  samples: number,
): Promise<string[]> {
  const times: number[] = [];
  let calls = 0n;
  for (let i = 0; i < samples; i++) {
    const began = performance.now();
    const answer = await replica.usage.getUsageSummary(request());
    times.push(performance.now() - began);
    calls = answer.totals?.calls ?? 0n;
  }
  times.sort((a, b) => a - b);
  return [label, fmt(Number(calls), 0), fmt(percentile(times, 50), 2), fmt(percentile(times, 99), 2)];
}

try {
  await prepareWayfind(ROOT);
  const ghz = await ensureGhz();
  const postgres = await startPostgres({ fsync: true });
  const sql = new pg.Client({ connectionString: postgres.url });
  console.log(
    `ledger bench: ${SECONDS} s per run, ${IN_FLIGHT} calls in flight per replica over ${TENANTS} tenants, PostgreSQL with fsync on, ${availableParallelism()} cores shared by all\n`,
  );
  // The replica whose copy is measured below, following everything the others write.
  const observer = await startReplica(postgres.url);
  await sql.connect();

  const capacity: string[][] = [];
  const observerCpuBefore = observer.server.cpuMs();
  let recordsApplied = 0;
  for (const writers of [1, 2, 3]) {
    for (const retryShare of [0, 0.1]) {
      const round = `n${writers}-r${retryShare * 100}`;
      const runs = await drive(postgres.url, writers, round, { seconds: SECONDS, retryShare });
      const sum = (pick: (run: DriveResult) => number) => runs.reduce((total, run) => total + pick(run), 0);
      const newKeys = sum((run) => run.newKeys);
      recordsApplied += newKeys;
      const stored = await countRows(sql, "idempotency_key LIKE $1", [`${round}-%`]);
      capacity.push([
        String(writers),
        `${retryShare * 100} %`,
        fmt(
          sum((run) => run.calls / run.seconds),
          0,
        ),
        fmt(
          sum((run) => run.newKeys / run.seconds),
          0,
        ),
        fmt(Math.max(...runs.map((run) => run.p50)), 1),
        fmt(Math.max(...runs.map((run) => run.p99)), 1),
        String(sum((run) => run.errors)),
        stored === newKeys
          ? `yes (${fmt(
              sum((run) => run.duplicates),
              0,
            )} retries)`
          : `NO: ${stored} rows, ${newKeys} new`,
      ]);
    }
  }
  // Everything the observer did meanwhile was following: applying the records' usage_recorded events.
  await observer.usage.getUsageSummary({ caller: { tenantId: "t0" } }); // fenced: caught up
  const applyUsPerRecord = ((observer.server.cpuMs() - observerCpuBefore) * 1000) / recordsApplied;
  console.log("The write path: replicas recording at once on one PostgreSQL (no RPC front)");
  printAligned(
    ["replicas", "retries", "calls/s", "new records/s", "p50 ms", "p99 ms", "errors", "counted once"],
    capacity,
    new Set([0, 2, 3, 4, 5, 6]),
  );
  console.log(
    `A replica that only follows spent ${fmt(applyUsPerRecord, 0)} µs of CPU per record (its usage_recorded event) meanwhile.`,
  );

  const overGrpc: string[][] = [];
  const fleet = [observer];
  for (const count of [1, 2, 3]) {
    while (fleet.length < count) fleet.push(await startReplica(postgres.url));
    const perReplica = Math.round(IN_FLIGHT / count);
    const results = await Promise.all(
      fleet.map(async (replica, i) => {
        const { result } = await runWithServerCpu(ghz, replica.server, {
          proto: "wayfind/v1/usage.proto",
          call: "wayfind.v1.UsageService/RecordUsage",
          data: {
            caller: { tenant_id: "grpc" },
            provider: "PROVIDER_ANTHROPIC",
            model: "claude-sonnet-4-5",
            usage: { input_tokens: 1000, output_tokens: 100, cache_read_input_tokens: 4000 },
            idempotency_key: `grpc-${count}-${i}-{{.WorkerID}}-{{.RequestNumber}}`,
          },
          connections: 4,
          streams: Math.ceil(perReplica / 4),
          durationS: SECONDS,
        });
        return result;
      }),
    );
    overGrpc.push([
      String(count),
      fmt(
        results.reduce((total, r) => total + r.rps, 0),
        0,
      ),
      fmt(Math.max(...results.map((r) => r.p50Ms)), 1),
      fmt(Math.max(...results.map((r) => r.p99Ms)), 1),
      fmt(results.reduce((total, r) => total + (r.serverCpuPct ?? 0), 0) / 100, 2),
      String(results.reduce((total, r) => total + r.errors, 0)),
    ]);
  }
  for (const replica of fleet.slice(1)) await replica.server.stop();
  console.log(`\nRecordUsage over gRPC (ghz, ${IN_FLIGHT} calls in flight over the fleet, new key per call)`);
  printAligned(
    ["replicas", "calls/s", "p50 ms", "p99 ms", "server cores", "errors"],
    overGrpc,
    new Set([0, 1, 2, 3, 4, 5]),
  );

  // The copy and the snapshot as records accumulate; then a new replica's start.
  const growth: string[][] = [];
  const measure = async (label: string) => {
    await observer.usage.getUsageSummary({ caller: { tenantId: "t0" } }); // fenced: caught up
    // A new replica restores the newest snapshot, then replays the log after it: wait for the
    // compaction that follows a burst (storage.postgres.compaction), as a replica started later would.
    const behind = async () => {
      const { rows } = await sql.query<{ n: string }>(
        "SELECT (SELECT max(seq) FROM wayfind_changes) - coalesce((SELECT max(seq) FROM wayfind_snapshots), 0) AS n",
      );
      return Number(rows[0]?.n);
    };
    for (let waited = 0; (await behind()) > 10_000 && waited < 180; waited++) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    const replayed = await behind();
    const records = await countRows(sql, "true", []);
    const sizes = copySizes(observer);
    const { ms, replica } = await timeToServe(postgres.url);
    await replica.server.stop();
    growth.push([label, fmt(records, 0), mib(sizes.copy), mib(sizes.snapshot), fmt(replayed, 0), fmt(ms, 0)]);
  };
  await measure("after the runs above");
  const recorded = await countRows(sql, "true", []);
  if (recorded < RECORDS) {
    await drive(postgres.url, 2, "fill", { seconds: 3_600, retryShare: 0, stopAt: RECORDS - recorded });
  }
  await measure(`after ${fmt(RECORDS, 0)} records`);
  console.log("\nWhat a replica keeps as the ledger grows (the records are in PostgreSQL, not in the copy)");
  printAligned(
    ["when", "records", "copy MiB", "snapshot MiB", "changes after it", "new replica serves in ms"],
    growth,
    new Set([1, 2, 3, 4, 5]),
  );
  console.log(
    "(the copy holds the fleet's events, usage_recorded among them, up to server.event_retention.max_events)",
  );

  const nowMs = Date.now();
  const filled = await bulkFill(sql, SUMMARY_RECORDS, nowMs);
  const total = await countRows(sql, "true", []);
  const { rows: disk } = await sql.query<{ bytes: string }>(
    "SELECT pg_database_size(current_database()) AS bytes",
  );
  const { rows: ledgerBytes } = await sql.query<{ bytes: string }>(
    `SELECT sum(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c
     WHERE c.relkind = 'r' AND (c.relname LIKE 'wayfind_usage_records_%' OR c.relname LIKE 'wayfind_usage_rollup_%'
       OR c.relname = 'wayfind_usage_keys')`,
  );
  const caller = { tenantId: "bulk" };
  const window = (days: number) => ({
    caller,
    startTime: timestampFromMs(nowMs - days * DAY_MS),
    endTime: timestampFromMs(nowMs),
  });
  const rows = [
    await summaryLatency(observer, "the last 24 hours", () => window(1), 200),
    await summaryLatency(observer, "the last 30 days", () => window(30), 200),
    await summaryLatency(
      observer,
      "30 days by model",
      () => ({ ...window(30), groupBy: UsageGroupBy.MODEL }),
      200,
    ),
    await summaryLatency(
      observer,
      "30 days by day",
      () => ({ ...window(30), groupBy: UsageGroupBy.DAY }),
      200,
    ),
  ];
  console.log(
    `\nGetUsageSummary over ${fmt(total, 0)} records (${fmt(filled, 0)} written by SQL for tenant "bulk"; PostgreSQL ${mib(Number(disk[0]?.bytes))} MiB)`,
  );
  printAligned(["window (tenant bulk)", "calls", "p50 ms", "p99 ms"], rows, new Set([1, 2, 3]));
  console.log(
    `The ledger's tables (records, keys, rollups, with indexes): ${mib(Number(ledgerBytes[0]?.bytes))} MiB, ${fmt(Number(ledgerBytes[0]?.bytes) / total, 0)} bytes per record.`,
  );
  await sql.end();
  await Promise.all(started.map((server) => server.stop()));
  await postgres.stop();
} finally {
  await Promise.all(started.map((server) => server.stop()));
  rmSync(scratch, { recursive: true, force: true });
}
