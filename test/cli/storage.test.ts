import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { clientWith } from "../support/auth.ts";
import { runCli } from "../support/cli.ts";
import { postgresUnavailable, startPostgres, type TestPostgres } from "../support/postgres.ts";
import { removeReplicas, startReplica, type TestReplica, usageEvents } from "../support/replicas.ts";

// `wayfind storage copy-to-postgres`: one server's SQLite data folder moved onto a new PostgreSQL
// database, and a replica started on that database answering as the server did.
const unavailable = postgresUnavailable();
let dir: string;
let configFile: string;
let dataDir: string;
let postgres: TestPostgres;
const started: TestReplica[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "wayfind-copy-to-postgres-"));
  configFile = join(dir, "wayfind.yaml");
  dataDir = join(dir, "data");
  writeFileSync(configFile, stringify({ tool_search: { semantic: { enabled: false } } }));
  if (!unavailable) postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  await removeReplicas(started);
  await postgres?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `wayfind <args>` to its end: exit code, stdout and stderr. */
async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const run = runCli(args, { WAYFIND_DATABASE_URL: "", ...env });
  const stdout: string[] = [];
  run.child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk.toString()));
  const code = await run.exited;
  return { code, stdout: stdout.join(""), stderr: run.stderr.join("") };
}

const copy = () =>
  cli(["storage", "copy-to-postgres", "--config", configFile, "--data-dir", dataDir], {
    WAYFIND_DATABASE_URL: postgres.url,
  });

/** The server on the data folder (no storage.postgres), or a new replica of the database. */
async function serve(databaseUrl: string, folder?: string): Promise<TestReplica> {
  const server = await startReplica(databaseUrl, folder, { config: configFile });
  started.push(server);
  return server;
}

function recordUsage(server: TestReplica, idempotencyKey: string, inputTokens: bigint) {
  return server.grpc(UsageService).recordUsage({
    caller: { tenantId: "acme", projectId: "billing" },
    provider: Provider.ANTHROPIC,
    model: "claude-sonnet-4-5",
    usage: { inputTokens, outputTokens: 10n, cacheReadInputTokens: 0n, cacheCreationInputTokens: 0n },
    idempotencyKey,
  });
}

const summaryOf = async (server: TestReplica) =>
  (await server.grpc(UsageService).getUsageSummary({ caller: { tenantId: "acme" } })).totals;

describe.skipIf(unavailable)(
  `wayfind storage copy-to-postgres${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    let secret: string;
    let before: Awaited<ReturnType<typeof summaryOf>>;
    let eventsBefore: number;

    it("refuses while a server holds the data folder, naming the process", async () => {
      const created = await cli([
        "keys",
        "create",
        "--tenant",
        "acme",
        "--role",
        "agent",
        "--role",
        "observer",
        "--data-dir",
        dataDir,
      ]);
      expect(created.code, created.stderr).toBe(0);
      secret = created.stdout.trim();
      const server = await serve("", dataDir);
      const acme = clientWith(ToolDiscoveryService, `http://127.0.0.1:${server.port}`, secret);
      // Registered as an operator on loopback does (no credential: the server's own host).
      await server.grpc(ToolDiscoveryService).registerTools({
        caller: { tenantId: "acme" },
        source: "billing",
        namespace: "billing",
        tools: [{ name: "refund_invoice", description: "Refund a paid invoice to the customer's card." }],
      });
      const activation = { caller: { tenantId: "acme", runId: "run-1" }, names: ["billing.refund_invoice"] };
      expect((await acme.activateTools(activation)).activated).toEqual(["billing.refund_invoice"]);
      for (let i = 0; i < 3; i++) await recordUsage(server, `call-${i}`, 100n * BigInt(i + 1));
      before = await summaryOf(server);
      eventsBefore = (await usageEvents(server, "acme", 3)).length;

      const refused = await copy();
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/in use by wayfind process \d+/);
      await server.stop();
    });

    it("copies the stopped server's state and says what it copied", async () => {
      const copied = await copy();
      expect(copied.code, copied.stderr).toBe(0);
      expect(copied.stdout).toContain("tools: 1");
      expect(copied.stdout).toContain("API keys: 1");
      expect(copied.stdout).toContain("usage records: 3");
    });

    it("starts a replica of the database from that state: the key, the tool, the activation, the ledger and the events", async () => {
      const replica = await serve(postgres.url);
      const acme = clientWith(ToolDiscoveryService, `http://127.0.0.1:${replica.port}`, secret);
      const found = await acme.searchTools({ query: "refund a paid invoice" });
      expect(found.tools.map((tool) => tool.name)).toContain("billing.refund_invoice");
      const again = await acme.activateTools({
        caller: { tenantId: "acme", runId: "run-1" },
        names: ["billing.refund_invoice"],
      });
      expect(again.alreadyVisible).toEqual(["billing.refund_invoice"]);
      expect(await summaryOf(replica)).toEqual(before);
      expect((await usageEvents(replica, "acme", eventsBefore)).length).toBe(eventsBefore);
    });

    it("answers a retried idempotency key as before, and numbers new records after the copied ones", async () => {
      const replica = started.at(-1) as TestReplica;
      expect((await recordUsage(replica, "call-1", 200n)).duplicate).toBe(true);
      expect((await recordUsage(replica, "call-3", 400n)).duplicate).toBe(false);
      expect((await summaryOf(replica))?.calls).toBe(4n);
      const pool = new pg.Pool({ connectionString: postgres.url, max: 1 });
      try {
        const { rows } = await pool.query("SELECT count(DISTINCT id)::int AS ids FROM wayfind_usage_records");
        expect(rows).toEqual([{ ids: 4 }]);
      } finally {
        await pool.end();
      }
    });

    it("refuses a database that is not a new one, changing nothing", async () => {
      const again = await copy();
      expect(again.code).toBe(1);
      expect(again.stderr).toContain("the shared database is not a new one");
      const replica = started.at(-1) as TestReplica;
      expect((await summaryOf(replica))?.calls).toBe(4n);
    });

    it("names the data folder to give when the one given holds no server's state", async () => {
      const empty = mkdtempSync(join(dir, "empty-"));
      const refused = await cli(["storage", "copy-to-postgres", "--data-dir", empty], {
        WAYFIND_DATABASE_URL: postgres.url,
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `${empty} holds no wayfind.db: name the data folder of the server to copy`,
      );
    });

    it("leaves the data folder as it was: served again without PostgreSQL, it answers as before", async () => {
      await (started.at(-1) as TestReplica).stop();
      const server = await serve("", dataDir);
      expect(await summaryOf(server)).toEqual(before);
    });
  },
);
