/**
 * One replica's usage ledger without the gRPC front, as a child process of bench/ledger.ts: a real
 * Replica (its own SQLite copy, following the shared change log, storing the fleet's events) and a
 * PostgresLedger, recording as fast as `--in-flight` concurrent calls go. Measures what the shared
 * database and the write path take, apart from what serving RPCs costs on the same cores.
 *
 * Usage: node --import tsx bench/lib/ledger-driver.ts URL DATA_DIR PREFIX SECONDS IN_FLIGHT TENANTS RETRY_SHARE [STOP_AT]
 * Prints one JSON line: calls, newKeys, duplicates, errors, latency percentiles, seconds.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import { openDatabase } from "../../src/database/sqlite.ts";
import { EventLog } from "../../src/events/index.ts";
import { ReplicatedEvents } from "../../src/replication/events.ts";
import { Replica } from "../../src/replication/replica.ts";
import { allMigrations } from "../../src/server/migrations.ts";
import { maintainPartitions, PostgresLedger, PricingTable } from "../../src/usage/index.ts";
import { percentile } from "./stats.ts";

const [
  url = "",
  dataDir = "",
  prefix = "",
  seconds = "5",
  inFlight = "64",
  tenants = "8",
  retryShare = "0",
  stopAt,
] = process.argv.slice(2);
const onError = (error: unknown) => process.stderr.write(`${String(error)}\n`);
const postgres = {
  url,
  poolSize: 4,
  compaction: { everyChanges: 1e8, checkIntervalMs: 3_600_000, replicaTimeoutMs: 600_000 },
};
const id = randomUUID();
const file = join(dataDir, "wayfind.db");
// As a replica starts: from the newest snapshot when the log was compacted.
await Replica.prepareCopy(postgres, { file, replicaId: id, holdsStandaloneState: () => false, onError });
const db = openDatabase(file, allMigrations);
const replica = await Replica.connect({
  postgres,
  id,
  db,
  holdsStandaloneState: () => false,
  onError,
});
const events = new EventLog(db, { onError });
const replicated = new ReplicatedEvents(events, db, replica, onError);
// The catalog and skills other replicas wrote to the log are of no use to this one's ledger: it
// passes over them (a replica serving calls applies them).
const pool = new pg.Pool({ connectionString: url, max: 1 });
const { rows: kinds } = await pool.query<{ kind: string }>("SELECT DISTINCT kind FROM wayfind_changes");
await pool.end();
const passedOver = kinds
  .map((row) => row.kind)
  .filter((kind) => kind !== replicated.write.kind)
  .map((kind) => ({ kind, apply: () => undefined }));
await replica.follow([replicated.write, ...passedOver]);
const ledger = await PostgresLedger.open({
  shared: replica,
  pricing: PricingTable.withDefaults(),
  retentionDays: 30,
});
await maintainPartitions(replica, 30);

/** A small deterministic PRNG, so runs choose the same retries. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const deadline = performance.now() + Number(seconds) * 1000;
const limit = stopAt === undefined ? Number.POSITIVE_INFINITY : Number(stopAt);
const latencies: number[] = [];
let calls = 0;
let newKeys = 0;
let duplicates = 0;
let errors = 0;
const began = performance.now();
await Promise.all(
  Array.from({ length: Number(inFlight) }, async (_, loop) => {
    const next = random(loop + 1);
    const acked: string[] = [];
    let n = 0;
    while (performance.now() < deadline && newKeys < limit) {
      const retry = acked.length > 0 && next() < Number(retryShare);
      const key = retry ? (acked[Math.floor(next() * acked.length)] as string) : `${prefix}-${loop}-${n++}`;
      const start = performance.now();
      try {
        const result = await ledger.record(
          {
            tenantId: `t${loop % Number(tenants)}`,
            projectId: `p${loop % 3}`,
            userId: `u${loop}`,
            sessionId: `s${loop}`,
            runId: "",
            entitlements: [],
            narrowToTools: [],
          },
          {
            provider: "anthropic",
            model: `claude-sonnet-4-${loop % 3}`,
            idempotencyKey: key,
            usage: {
              inputTokens: 1000,
              outputTokens: 100,
              cacheReadInputTokens: 4000,
              cacheCreationInputTokens: 0,
            },
          },
        );
        latencies.push(performance.now() - start);
        calls++;
        if (result.duplicate) duplicates++;
        else {
          newKeys++;
          acked.push(key);
        }
      } catch (error) {
        errors++;
        if (errors < 5) onError(error);
      }
    }
  }),
);
const elapsed = (performance.now() - began) / 1000;
latencies.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    calls,
    newKeys,
    duplicates,
    errors,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    seconds: elapsed,
  }),
);
replicated.flush();
await replica.close();
events.close();
db.close();
