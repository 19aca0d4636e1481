import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { type CliRun, listeningPort, runCli } from "../support/cli.ts";

const TRIALS = 3;
const CLIENTS = 8;
/** Acknowledged records after which the server is killed, with every client still mid-call. */
const KILL_AFTER = 150;

const dirs: string[] = [];
const servers: CliRun[] = [];
afterAll(() => {
  // A trial that failed before its kill leaves no server behind.
  for (const serve of servers) if (serve.child.exitCode === null) serve.child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Records usage from concurrent clients until the server dies; returns the keys it acknowledged. */
async function recordUntilKilled(port: number, onAcknowledged: (count: number) => void): Promise<string[]> {
  const acknowledged: string[] = [];
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      // One connection per client, as separate agent processes would have.
      const usage = createClient(UsageService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
      for (let call = 0; ; call++) {
        const key = `msg-${client}-${call}`;
        try {
          await usage.recordUsage({
            caller: { tenantId: `tenant-${client % 2}`, sessionId: `s-${client}`, runId: `r-${call}` },
            provider: Provider.ANTHROPIC,
            model: "claude-sonnet-4-5",
            usage: {
              inputTokens: 100n,
              outputTokens: 10n,
              cacheReadInputTokens: 0n,
              cacheCreationInputTokens: 0n,
            },
            idempotencyKey: key,
          });
        } catch {
          return; // the server is gone
        }
        acknowledged.push(key);
        onAcknowledged(acknowledged.length);
      }
    }),
  );
  return acknowledged;
}

describe("a server killed with SIGKILL while recording usage", () => {
  it("keeps exactly one usage_recorded event and one daily count per committed usage record, and every acknowledged record", async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const dataDir = mkdtempSync(join(tmpdir(), "wayfind-crash-"));
      dirs.push(dataDir);
      const serve = runCli(["serve", "--port", "0", "--data-dir", dataDir]);
      servers.push(serve);
      const port = await listeningPort(serve);
      expect(port).toBeGreaterThan(0);

      const acknowledged = await recordUntilKilled(port, (count) => {
        if (count === KILL_AFTER) serve.child.kill("SIGKILL");
      });
      expect(await serve.exited).toBeNull();

      const db = new Database(join(dataDir, "wayfind.db"), { readonly: true });
      const records = db
        .prepare<[], { id: number; key: string }>(
          "SELECT id, idempotency_key AS key FROM usage_records ORDER BY id",
        )
        .all();
      const eventRecordIds = db
        .prepare<[], number>(
          "SELECT json_extract(attributes, '$.record_id') FROM events WHERE type = 'usage_recorded' ORDER BY 1",
        )
        .pluck()
        .all();
      const dailyCalls = db.prepare<[], number>("SELECT TOTAL(calls) FROM usage_daily").pluck().get();
      db.close();

      expect(eventRecordIds).toEqual(records.map((record) => record.id));
      expect(dailyCalls).toBe(records.length);
      const committedKeys = new Set(records.map((record) => record.key));
      expect(acknowledged.filter((key) => !committedKeys.has(key))).toEqual([]);
      expect(records.length).toBeGreaterThanOrEqual(KILL_AFTER);
    }
  }, 60_000);
});
