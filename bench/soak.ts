/**
 * Soak: the demo server under a steady mix of calls for minutes, sampling what must stay flat.
 *
 * A paced client (one process, native gRPC over h2c on loopback) sends `--rate` calls per second:
 * RecordUsage with a fresh idempotency key (a row and an event each), SearchTools, ResolveTool on a
 * new run every few calls (an activation and an event), SearchSkills, GetRelevantSkills,
 * GetUsageSummary (over all time, and over the last 24 hours) and RenderToolPrompt. Beside it a
 * health check runs every 50 ms, so a stalled event loop shows as a slow check. Every `--sample` seconds it prints the server's RSS, the database's
 * used bytes (pages in use, from a read-only connection) and file bytes (db + WAL), the calls that
 * completed, their p50/p99 and the slowest health check of the window.
 *
 * The server runs with its defaults (retention included) unless `--config` names a YAML file whose keys
 * are added to the demo catalog and skill pack, e.g. shorter retention to see the database plateau
 * within the run. At the end it prints each table's rows and bytes (indexes included) and its growth
 * per minute: what retention bounds (events by count, usage records by age) and what it does not.
 *
 * Usage: node --import tsx bench/soak.ts [--duration S] [--rate N] [--sample S] [--config FILE]
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import Database from "better-sqlite3";
import { parse, stringify } from "yaml";
import { Health, HealthCheckRequestSchema } from "../gen/ts/grpc/health/v1/health_pb.ts";
import { type CallerContext, CallerContextSchema, Provider } from "../gen/ts/wayfind/v1/common_pb.ts";
import { SkillService } from "../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../gen/ts/wayfind/v1/usage_pb.ts";
import { prepareWayfind, ROOT, spawnServer } from "./lib/grpc-bench-support.ts";
import { percentile } from "./lib/stats.ts";

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string", default: "300" },
    rate: { type: "string", default: "300" },
    sample: { type: "string", default: "10" },
    config: { type: "string" },
  },
  strict: true,
});
const DURATION_S = Number(flags.duration);
const RATE = Number(flags.rate);
const SAMPLE_S = Number(flags.sample);
const TENANTS = ["acme", "globex", "initech", "umbrella"];
const QUERIES = [
  "create a pull request",
  "send a message to a channel",
  "list open issues assigned to me",
  "search files in the workspace",
  "schedule a meeting tomorrow",
  "close the jira ticket",
];
const TASKS = [
  "open a pull request for the fix on branch main",
  "call a paginated HTTP API and retry on 429",
  "rotate a leaked API key",
  "migrate a SQL table without downtime",
];

type Clients = {
  tools: Client<typeof ToolDiscoveryService>;
  skills: Client<typeof SkillService>;
  usage: Client<typeof UsageService>;
  health: Client<typeof Health>;
};

const work = mkdtempSync(join(tmpdir(), "wayfind-soak-"));
try {
  await prepareWayfind(ROOT);
  const dataDir = join(work, "data");
  const configFile = writeConfig(work, flags.config);
  const server = await spawnServer(
    ["bin/wayfind.js", "serve", "--port", "0", "--data-dir", dataDir, "--config", configFile],
    { logFile: join(work, "server.log") },
  );
  const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.port}` });
  const clients: Clients = {
    tools: createClient(ToolDiscoveryService, transport),
    skills: createClient(SkillService, transport),
    usage: createClient(UsageService, transport),
    health: createClient(Health, transport),
  };
  const toolNames = await deferredToolNames(clients, TENANTS[0] ?? "acme");
  process.stdout.write(
    `soak: ${RATE} calls/s for ${DURATION_S} s, sample every ${SAMPLE_S} s (server pid ${server.pid})\n\n`,
  );
  const columns = [
    "t s",
    "calls",
    "errors",
    "p50 ms",
    "p99 ms",
    "health max ms",
    "RSS MiB",
    "db used MiB",
    "db files MiB",
    "WAL MiB",
  ];
  const rows: string[][] = [];
  const print = (row: string[]) => process.stdout.write(`${row.map((c) => c.padStart(14)).join("")}\n`);
  print(columns);

  const window = { latencies: [] as number[], errors: new Map<string, number>(), healthMax: 0 };
  let sequence = 0;
  const started = performance.now();
  const deadline = started + DURATION_S * 1000;

  // Health checks on their own timer: a slow one means the server's event loop was held.
  const healthTimer = setInterval(() => {
    const t0 = performance.now();
    void clients.health.check(create(HealthCheckRequestSchema, {})).then(() => {
      window.healthMax = Math.max(window.healthMax, performance.now() - t0);
    });
  }, 50);

  // Paced sending: every 10 ms, the calls due by now (no catch-up bursts beyond one tick's worth).
  let sent = 0;
  const sendTimer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * RATE);
    const burst = Math.min(due - sent, Math.ceil(RATE / 50));
    for (let i = 0; i < burst; i++) {
      const n = sequence++;
      const t0 = performance.now();
      oneCall(clients, n, toolNames).then(
        () => window.latencies.push(performance.now() - t0),
        (error: unknown) => {
          const code = error instanceof ConnectError ? Code[error.code] : String(error);
          window.errors.set(code, (window.errors.get(code) ?? 0) + 1);
        },
      );
    }
    sent = due;
  }, 10);

  const firstRss = server.rss().nowMiB;
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, SAMPLE_S * 1000));
    const sorted = window.latencies.sort((a, b) => a - b);
    const errors = [...window.errors.values()].reduce((a, b) => a + b, 0);
    const db = databaseSize(join(dataDir, "wayfind.db"));
    const row = [
      ((performance.now() - started) / 1000).toFixed(0),
      String(sorted.length),
      String(errors),
      percentile(sorted, 50).toFixed(2),
      percentile(sorted, 99).toFixed(2),
      window.healthMax.toFixed(1),
      server.rss().nowMiB.toFixed(1),
      (db.usedBytes / 2 ** 20).toFixed(1),
      (db.fileBytes / 2 ** 20).toFixed(1),
      (db.walBytes / 2 ** 20).toFixed(1),
    ];
    rows.push(row);
    print(row);
    if (window.errors.size > 0)
      process.stdout.write(`   errors: ${JSON.stringify(Object.fromEntries(window.errors))}\n`);
    window.latencies = [];
    window.errors.clear();
    window.healthMax = 0;
  }
  clearInterval(sendTimer);
  clearInterval(healthTimer);
  await new Promise((resolve) => setTimeout(resolve, 500));
  summarize(rows, firstRss, server.rss().peakMiB);
  printTables(join(dataDir, "wayfind.db"), DURATION_S);
  await server.stop();
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** The demo config with absolute paths, plus the keys of `extra` (a YAML file) when given. */
function writeConfig(dir: string, extra: string | undefined): string {
  const demo = parse(readFileSync(join(ROOT, "demo/wayfind.yaml"), "utf8")) as Record<string, unknown>;
  const absolute = (entries: unknown) =>
    (entries as { path: string }[]).map((entry) => ({ ...entry, path: join(ROOT, "demo", entry.path) }));
  const config: Record<string, unknown> = {
    ...demo,
    catalogs: absolute(demo.catalogs),
    skill_packs: absolute(demo.skill_packs),
  };
  if (extra !== undefined) Object.assign(config, parse(readFileSync(extra, "utf8")) as object);
  const file = join(dir, "wayfind.yaml");
  writeFileSync(file, stringify(config));
  return file;
}

async function deferredToolNames(clients: Clients, tenant: string): Promise<string[]> {
  const found = await clients.tools.searchTools({ caller: { tenantId: tenant }, query: "create", limit: 20 });
  const names = found.tools.map((tool) => tool.name);
  if (names.length === 0) throw new Error("the demo catalog answered no tools for 'create'");
  return names;
}

/** Call n of the mix: mostly writes that leave rows behind (usage, activations), then reads. */
function oneCall(clients: Clients, n: number, toolNames: readonly string[]): Promise<unknown> {
  const tenant = TENANTS[n % TENANTS.length] ?? "acme";
  const caller: CallerContext = create(CallerContextSchema, {
    tenantId: tenant,
    sessionId: `session-${n % 200}`,
    runId: `run-${Math.floor(n / 8)}`,
  });
  const pick = <T>(list: readonly T[]) => list[n % list.length] as T;
  switch (n % 10) {
    case 0:
    case 1:
    case 2:
    case 3:
      return clients.usage.recordUsage({
        caller,
        provider: Provider.ANTHROPIC,
        model: "claude-sonnet-4-5",
        idempotencyKey: `soak-${process.pid}-${n}`,
        usage: {
          inputTokens: 1200n,
          outputTokens: 300n,
          cacheReadInputTokens: 9000n,
          cacheCreationInputTokens: 400n,
        },
      });
    case 4:
    case 5:
      return clients.tools.searchTools({ caller, query: pick(QUERIES) });
    case 6:
      return clients.tools.resolveTool({ caller, name: pick(toolNames) });
    case 7:
      return clients.skills.searchSkills({ caller, query: pick(TASKS) });
    case 8:
      return n % 20 === 8
        ? clients.skills.getRelevantSkills({ caller, task: pick(TASKS) })
        : clients.tools.renderToolPrompt({ caller });
    default: {
      if (n % 20 === 9) return clients.usage.getUsageSummary({ caller });
      // The last 24 hours: both edges inside a minute, an hour and a day, as a dashboard asks.
      const now = Date.now();
      return clients.usage.getUsageSummary({
        caller,
        startTime: timestampFromMs(now - 86_400_000),
        endTime: timestampFromMs(now),
      });
    }
  }
}

/** Pages in use (what retention bounds) and bytes on disk (db + WAL; SQLite reuses freed pages). */
function databaseSize(file: string): { usedBytes: number; fileBytes: number; walBytes: number } {
  const walBytes = existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0;
  const fileBytes = (existsSync(file) ? statSync(file).size : 0) + walBytes;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    const pages = db.pragma("page_count", { simple: true }) as number;
    const free = db.pragma("freelist_count", { simple: true }) as number;
    return { usedBytes: (pages - free) * pageSize, fileBytes, walBytes };
  } finally {
    db.close();
  }
}

/** RSS and database growth over the second half of the run: what "flat" and "bounded" are judged on. */
function summarize(rows: readonly string[][], firstRss: number, peakRss: number): void {
  if (rows.length < 2) return;
  const half = rows.slice(Math.floor(rows.length / 2));
  const first = half[0] ?? [];
  const last = half[half.length - 1] ?? [];
  const minutes = (Number(last[0]) - Number(first[0])) / 60 || 1;
  const slope = (column: number) => (Number(last[column]) - Number(first[column])) / minutes;
  const calls = rows.reduce((sum, row) => sum + Number(row[1]), 0);
  const errors = rows.reduce((sum, row) => sum + Number(row[2]), 0);
  const healthMax = Math.max(...rows.map((row) => Number(row[5])));
  process.stdout.write(
    `\n${calls} calls, ${errors} errors; slowest health check ${healthMax.toFixed(1)} ms\n` +
      `RSS: ${firstRss.toFixed(1)} MiB after start, peak ${peakRss.toFixed(1)} MiB; second half ${slope(6).toFixed(2)} MiB/min\n` +
      `database used: second half ${slope(7).toFixed(2)} MiB/min; files ${slope(8).toFixed(2)} MiB/min\n`,
  );
}

/** Rows, bytes (table and its indexes, from SQLite's dbstat) and growth per minute of each table. */
function printTables(file: string, seconds: number): void {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const bytes = db
      .prepare<[], { name: string; bytes: number }>(
        `SELECT coalesce(m.tbl_name, s.name) AS name, sum(s.pgsize) AS bytes
         FROM dbstat s LEFT JOIN sqlite_schema m ON m.name = s.name GROUP BY 1 ORDER BY 2 DESC`,
      )
      .all();
    process.stdout.write("\ntable                          rows      MiB   MiB/min  bytes/row\n");
    for (const { name, bytes: size } of bytes.slice(0, 8)) {
      const rows = db
        .prepare(`SELECT count(*) FROM "${name.replaceAll('"', '""')}"`)
        .pluck()
        .get() as number;
      const mib = size / 2 ** 20;
      process.stdout.write(
        `${name.padEnd(26)}${String(rows).padStart(10)}${mib.toFixed(1).padStart(9)}${((mib / seconds) * 60).toFixed(2).padStart(10)}${(rows ? size / rows : 0).toFixed(0).padStart(11)}\n`,
      );
    }
  } finally {
    db.close();
  }
}
