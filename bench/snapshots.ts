/**
 * The change log's compaction (issue 17, docs/replicas.md "Compaction"): what a snapshot of a replica's
 * copy costs, and what it buys a new replica.
 *
 * Fills a fleet's state through one `wayfind serve` replica (the demo catalog, --tools registered tools,
 * --usage usage records: one change each), then measures:
 * - taking a snapshot of that copy (VACUUM INTO on a worker thread) and storing it in PostgreSQL, with
 *   this process's worst event-loop delay meanwhile (the replica holding the lease pays the same);
 * - compacting the log behind it;
 * - a new replica's start (process start to listening) replaying the whole log vs from the snapshot.
 *
 * Starts its own PostgreSQL (test/support/postgres.ts). Reads nothing outside the repository.
 * Usage: node --import tsx bench/snapshots.ts [--tools N] [--usage N]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import pg from "pg";
import { parse, stringify } from "yaml";
import { Provider } from "../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../gen/ts/wayfind/v1/usage_pb.ts";
import { ChangeLog } from "../src/replication/change-log.ts";
import { SnapshotStore, takeSnapshot } from "../src/replication/snapshots.ts";
import { startPostgres } from "../test/support/postgres.ts";
import { removeReplicas, startReplica, type TestReplica } from "../test/support/replicas.ts";
import { printAligned, ROOT } from "./lib/grpc-bench-support.ts";

const { values } = parseArgs({
  options: { tools: { type: "string", default: "5000" }, usage: { type: "string", default: "20000" } },
});
const TOOLS = Number(values.tools);
const USAGE = Number(values.usage);
const REGISTER_BATCH = 1_000;
const USAGE_IN_FLIGHT = 16;

const WORDS = ["invoice", "customer", "ticket", "repository", "calendar", "refund", "shipment", "report"];
const VERBS = ["create", "list", "update", "delete", "search", "export", "approve", "archive"];

function benchTool(i: number) {
  const noun = WORDS[i % WORDS.length] as string;
  const verb = VERBS[Math.floor(i / WORDS.length) % VERBS.length] as string;
  return {
    name: `${verb}_${noun}_${i}`,
    description: `${verb} a ${noun} (variant ${i}) in the back office; returns the ${noun} as JSON.`,
    inputSchema: {
      type: "object",
      properties: { id: { type: "string", description: `the ${noun} id` }, note: { type: "string" } },
      required: ["id"],
    },
  };
}

const work = mkdtempSync(join(tmpdir(), "wayfind-bench-snapshots-"));
const config = join(work, "wayfind.yaml");
// The demo config (catalogs and skill pack, paths made absolute), and compaction left to this bench.
const demo = parse(readFileSync(join(ROOT, "demo", "wayfind.yaml"), "utf8")) as {
  catalogs: { path: string }[];
  skill_packs: { path: string }[];
};
for (const entry of [...demo.catalogs, ...demo.skill_packs]) entry.path = join(ROOT, "demo", entry.path);
writeFileSync(
  config,
  stringify({
    ...demo,
    storage: {
      postgres: { url: "postgres://set-by/WAYFIND_DATABASE_URL", compaction: { every_changes: 100_000_000 } },
    },
  }),
);
const server = await startPostgres();
const pool = new pg.Pool({ connectionString: server.url, max: 4 });
const started: TestReplica[] = [];
async function timedStart(dataDir?: string): Promise<number> {
  const at = performance.now();
  started.push(await startReplica(server.url, dataDir, { config }));
  return performance.now() - at;
}

try {
  const filler = await startReplica(server.url, undefined, { config });
  started.push(filler);
  const tools = filler.grpc(ToolDiscoveryService);
  for (let from = 0; from < TOOLS; from += REGISTER_BATCH) {
    const batch = Array.from({ length: Math.min(REGISTER_BATCH, TOOLS - from) }, (_, i) =>
      benchTool(from + i),
    );
    await tools.registerTools({
      caller: { tenantId: "acme" },
      source: `bench-${from}`,
      namespace: "office",
      tools: batch,
    });
  }
  const usage = filler.grpc(UsageService);
  let next = 0;
  await Promise.all(
    Array.from({ length: USAGE_IN_FLIGHT }, async () => {
      for (let i = next++; i < USAGE; i = next++)
        await usage.recordUsage({
          caller: { tenantId: `tenant-${i % 50}`, runId: `run-${i % 500}` },
          provider: Provider.ANTHROPIC,
          model: "claude-sonnet-4-5",
          usage: {
            inputTokens: 1200n,
            outputTokens: 300n,
            cacheReadInputTokens: 800n,
            cacheCreationInputTokens: 0n,
          },
          idempotencyKey: `bench-${i}`,
        });
    }),
  );
  const log = await ChangeLog.open(pool);
  const changes = await log.head();

  const replayMs = await timedStart();

  // The filler stops so its copy is quiet; the holder of the lease snapshots a copy that keeps applying.
  await filler.stop();
  const copy = join(filler.dataDir, "wayfind.db");
  const snapshotFile = join(work, "snapshot.db");
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let at = performance.now();
  const seq = await takeSnapshot(copy, snapshotFile);
  const takeMs = performance.now() - at;
  at = performance.now();
  const stored = await new SnapshotStore(pool).store(snapshotFile, seq, "bench");
  const storeMs = performance.now() - at;
  loop.disable();
  at = performance.now();
  const compacted = await log.compact(seq, 60_000);
  const compactMs = performance.now() - at;

  const head = await log.head();
  const restoreMs = await timedStart();

  console.log(
    `PostgreSQL from ${server.binaries}; state: demo catalog + ${TOOLS.toLocaleString("en")} registered tools + ` +
      `${USAGE.toLocaleString("en")} usage records = ${changes.toLocaleString("en")} changes in the log\n`,
  );
  printAligned(
    ["step", "ms", "detail"],
    [
      [
        "take snapshot (VACUUM INTO, worker thread)",
        takeMs.toFixed(0),
        `${(stored.bytes / 1024 / 1024).toFixed(1)} MiB`,
      ],
      [
        "store it in PostgreSQL (1 MiB chunks)",
        storeMs.toFixed(0),
        `max event-loop delay ${(loop.max / 1e6).toFixed(1)} ms`,
      ],
      [
        "compact the log behind it",
        compactMs.toFixed(0),
        `${compacted.deleted.toLocaleString("en")} changes deleted`,
      ],
      [
        "new replica, replaying the whole log",
        replayMs.toFixed(0),
        `${changes.toLocaleString("en")} changes`,
      ],
      [
        "new replica, from the snapshot",
        restoreMs.toFixed(0),
        `then ${(head - seq).toLocaleString("en")} changes`,
      ],
    ],
    new Set([1]),
  );
} finally {
  await removeReplicas(started);
  await pool.end();
  await server.stop();
  rmSync(work, { recursive: true, force: true });
}
