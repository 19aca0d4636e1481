import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { KeyService } from "../../gen/ts/wayfind/v1/keys_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKeySha256 } from "../../src/auth/index.ts";
import { apiKey, clientWith } from "../support/auth.ts";
import { runCli } from "../support/cli.ts";
import { mcpHeaders, openMcpSession } from "../support/mcp-session.ts";
import { fleetForFile, startReplica, type TestReplica } from "../support/replicas.ts";
import { failure } from "../support/rpc.ts";
import { cuttableLink } from "../support/tcp-cut.ts";

// Issue 47: API keys are fleet state. Three `wayfind serve` processes on one real PostgreSQL; keys
// created, revoked or raced through any of them (KeyService, `wayfind keys`) hold on all of them.
const operator = apiKey("operator", { roles: ["admin"] });
let configDir: string;
let configFile: string;
beforeAll(() => {
  configDir = mkdtempSync(join(tmpdir(), "wayfind-replica-keys-"));
  configFile = join(configDir, "wayfind.yaml");
  writeFileSync(
    configFile,
    stringify({
      auth: { allow_unauthenticated: false, api_keys: [operator.entry] },
      tool_search: { semantic: { enabled: false } },
    }),
  );
});
afterAll(() => {
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});
// Registered after the hooks above: the replicas start once the config exists.
const { fleet, unavailable } = fleetForFile(3, { config: () => configFile });
const { replicas } = fleet;

const urlOf = (replica: TestReplica) => `http://127.0.0.1:${replica.port}`;
const keysOn = (replica: TestReplica) => clientWith(KeyService, urlOf(replica), operator.secret);
const searchOn = (replica: TestReplica, secret: string) =>
  clientWith(ToolDiscoveryService, urlOf(replica), secret).searchTools({ query: "weather" });

let made = 0;
/** A new key of acme's made through `replica`'s KeyService: agent and observer. */
async function newKey(replica: TestReplica): Promise<{ id: string; secret: string }> {
  const id = `fleet-${++made}`;
  const { secret } = await keysOn(replica).createApiKey({
    id,
    tenantId: "acme",
    roles: ["agent", "observer"],
  });
  return { id, secret };
}

/** How an open stream ended (its messages meanwhile read and dropped): the error it failed with, or "still open" after `ms`. */
async function endOf(
  stream: AsyncIterator<unknown>,
  ms = 5_000,
): Promise<ConnectError | "still open" | "ended"> {
  const timeout = new Promise<"still open">((resolve) => setTimeout(() => resolve("still open"), ms).unref());
  const end = (async () => {
    try {
      while (!(await stream.next()).done);
      return "ended" as const;
    } catch (error) {
      return ConnectError.from(error);
    }
  })();
  return Promise.race([end, timeout]);
}

/** `wayfind keys …` against the fleet: WAYFIND_DATABASE_URL names its database. */
async function fleetKeysCli(
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = runCli(["keys", ...args], { WAYFIND_DATABASE_URL: fleet.postgres.url });
  const stdout: string[] = [];
  run.child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk.toString()));
  const code = await run.exited;
  return { code, stdout: stdout.join(""), stderr: run.stderr.join("") };
}

describe.skipIf(unavailable)(
  `API keys on three replicas of one PostgreSQL${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("accept a key created through one replica on every other on their next call, and list it everywhere", async () => {
      const [a, b, c] = replicas as [TestReplica, TestReplica, TestReplica];
      const key = await newKey(a);
      for (const replica of [b, c, a]) {
        await expect(searchOn(replica, key.secret)).resolves.toBeDefined();
        const listed = await keysOn(replica).listApiKeys({});
        expect(listed.keys.map((listedKey) => listedKey.id)).toContain(key.id);
      }
    });

    it("refuse a key revoked through one replica on every other on their next call, ending its watch stream and MCP session there (they went on)", async () => {
      const [a, b, c] = replicas as [TestReplica, TestReplica, TestReplica];
      const key = await newKey(c);
      const stream = clientWith(ToolDiscoveryService, urlOf(b), key.secret)
        .watchToolEvents({})
        [Symbol.asyncIterator]();
      expect((await stream.next()).value?.message.case).toBe("status");
      // Watched from before the revocation; the window covers the MCP session opened meanwhile.
      const streamEnd = endOf(stream, 15_000);
      const session = await openMcpSession(urlOf(c), key.secret);
      const sessionStream = await fetch(`${urlOf(c)}/mcp`, { headers: mcpHeaders(key.secret, session) });
      expect(sessionStream.status).toBe(200);
      const reader = sessionStream.body?.getReader();
      // Ended either way: the stream closed, or its connection cut.
      const sessionEnd = (async () => {
        for (;;) if ((await reader?.read())?.done !== false) return "ended";
      })().catch(() => "ended");

      expect((await keysOn(a).revokeApiKey({ id: key.id, tenantId: "acme" })).revoked).toBe(true);
      for (const replica of [b, c]) {
        const refused = await failure(searchOn(replica, key.secret));
        expect(refused.code).toBe(Code.Unauthenticated);
        expect(refused.rawMessage).toBe(`API key ${key.id} has been revoked`);
      }
      const ended = await streamEnd;
      expect(ended).toBeInstanceOf(ConnectError);
      expect((ended as ConnectError).rawMessage).toBe(`API key ${key.id} has been revoked`);
      expect(await Promise.race([sessionEnd, sleep(5_000, "open")])).toBe("ended");
    });

    it("refuse every call started after a revocation was answered, while calls on another replica race it", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      const key = await newKey(a);
      let racing = true;
      const outcomes: string[] = [];
      const race = (async () => {
        while (racing)
          outcomes.push(
            await searchOn(b, key.secret).then(
              () => "ok",
              (error: unknown) => Code[ConnectError.from(error).code],
            ),
          );
      })();
      await sleep(200);
      await keysOn(a).revokeApiKey({ id: key.id, tenantId: "acme" });
      const after = await Promise.all(
        Array.from({ length: 20 }, () => failure(searchOn(b, key.secret)).then((error) => error.code)),
      );
      racing = false;
      await race;
      expect(new Set(after)).toEqual(new Set([Code.Unauthenticated]));
      // During the race: served, then refused for good; never another answer.
      expect(new Set(outcomes)).toEqual(new Set(["ok", "Unauthenticated"]));
      expect(outcomes.slice(outcomes.indexOf("Unauthenticated"))).not.toContain("ok");
    });

    it("make a replica that was down while a key was revoked refuse it from its first call after it restarts", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      const key = await newKey(a);
      await expect(searchOn(b, key.secret)).resolves.toBeDefined();
      await b.stop();
      await keysOn(a).revokeApiKey({ id: key.id, tenantId: "acme" });
      const restarted = await startReplica(fleet.postgres.url, b.dataDir, { config: configFile });
      replicas[1] = restarted;
      const refused = await failure(searchOn(restarted, key.secret));
      expect(refused.code).toBe(Code.Unauthenticated);
      expect(refused.rawMessage).toBe(`API key ${key.id} has been revoked`);
    });

    it("let one of three replicas creating the same key id at once win; the others answer ALREADY_EXISTS", async () => {
      for (let round = 0; round < 5; round++) {
        const id = `raced-${round}`;
        const answers = await Promise.allSettled(
          replicas.map((replica) => keysOn(replica).createApiKey({ id, tenantId: "acme", roles: ["agent"] })),
        );
        const won = answers.flatMap((answer) => (answer.status === "fulfilled" ? [answer.value] : []));
        const lost = answers.flatMap((answer) =>
          answer.status === "rejected" ? [ConnectError.from(answer.reason)] : [],
        );
        expect(won).toHaveLength(1);
        expect(lost.map((error) => error.code)).toEqual([Code.AlreadyExists, Code.AlreadyExists]);
        for (const replica of replicas)
          await expect(searchOn(replica, won[0]?.secret ?? "")).resolves.toBeDefined();
      }
    });

    it("take `wayfind keys create|list|revoke` pointed at the fleet's database to every replica, saying so", async () => {
      const [a, b, c] = replicas as [TestReplica, TestReplica, TestReplica];
      const created = await fleetKeysCli("create", "--tenant", "acme", "--role", "agent", "--id", "from-cli");
      expect(created.code).toBe(0);
      expect(created.stderr).toContain("keys of the fleet on postgres://");
      const secret = created.stdout.trim();
      for (const replica of [a, b, c]) await expect(searchOn(replica, secret)).resolves.toBeDefined();
      const listed = await fleetKeysCli("list");
      expect(listed.stdout).toContain("from-cli  tenant=acme  roles=agent");
      expect((await fleetKeysCli("revoke", "from-cli", "--tenant", "acme")).stdout).toBe(
        "revoked from-cli\n",
      );
      for (const replica of [a, b, c])
        expect((await failure(searchOn(replica, secret))).code).toBe(Code.Unauthenticated);
    });

    it("refuse `wayfind keys` on a replica's data dir without the fleet's database, saying what to give", async () => {
      const run = runCli(["keys", "list", "--data-dir", (replicas[0] as TestReplica).dataDir]);
      expect(await run.exited).toBe(2);
      expect(run.stderr.join("")).toContain(
        "is a replica's copy of a fleet on PostgreSQL, whose keys are the fleet's: give the fleet's database",
      );
    });

    it("share the keys a replica's copy held from before keys were shared (an upgrade), keeping their secrets", async () => {
      const [a, b] = replicas as [TestReplica, TestReplica];
      await b.stop();
      const secret = `wf_made-before-issue-47-${"y".repeat(24)}`;
      const copy = new Database(join(b.dataDir, "wayfind.db"));
      try {
        copy
          .prepare(
            `INSERT INTO api_keys (id, key_sha256, tenant_id, roles_json, entitlements_json, projects_json, created_at_ms)
             VALUES ('legacy', ?, 'acme', '["agent"]', '[]', '[]', 1)`,
          )
          .run(apiKeySha256(secret));
        copy.prepare("DELETE FROM replication_state WHERE key = 'keys_shared'").run();
      } finally {
        copy.close();
      }
      const restarted = await startReplica(fleet.postgres.url, b.dataDir, { config: configFile });
      replicas[1] = restarted;
      for (const replica of [restarted, a]) await expect(searchOn(replica, secret)).resolves.toBeDefined();
      const listed = await keysOn(a).listApiKeys({});
      expect(listed.keys.find((key) => key.id === "legacy")?.createdAt?.seconds).toBe(0n);
    });

    it("share the keys `wayfind keys create` made in a data dir before its replica first started", async () => {
      const a = replicas[0] as TestReplica;
      const dataDir = mkdtempSync(join(tmpdir(), "wayfind-replica-"));
      const created = runCli([
        "keys",
        "create",
        "--tenant",
        "acme",
        "--role",
        "agent",
        "--data-dir",
        dataDir,
      ]);
      const secret: string[] = [];
      created.child.stdout.on("data", (chunk: Buffer) => secret.push(chunk.toString()));
      expect(await created.exited).toBe(0);
      const started = await startReplica(fleet.postgres.url, dataDir, { config: configFile });
      replicas.push(started);
      for (const replica of [started, a])
        await expect(searchOn(replica, secret.join("").trim())).resolves.toBeDefined();
    });

    it("never let a replica cut off from the database while a key was revoked elsewhere accept it again: UNAVAILABLE while cut off, revoked once back", async () => {
      const a = replicas[0] as TestReplica;
      const link = await cuttableLink(Number(new URL(fleet.postgres.url).port));
      try {
        const linkUrl = new URL(fleet.postgres.url);
        linkUrl.port = String(link.port);
        const cutOff = await startReplica(linkUrl.toString(), undefined, { config: configFile });
        replicas.push(cutOff);
        const key = await newKey(a);
        await expect(searchOn(cutOff, key.secret)).resolves.toBeDefined();

        link.cut();
        await keysOn(a).revokeApiKey({ id: key.id, tenantId: "acme" });
        await sleep(3_500);
        const outcomes: string[] = [];
        const outcome = () =>
          searchOn(cutOff, key.secret).then(
            () => "ok",
            (error: unknown) => Code[ConnectError.from(error).code],
          );
        outcomes.push(await outcome());
        link.restore();
        for (const deadline = Date.now() + 20_000; outcomes.at(-1) !== "Unauthenticated"; ) {
          if (Date.now() > deadline) throw new Error(`still not caught up: ${outcomes.join(", ")}`);
          await sleep(100);
          outcomes.push(await outcome());
        }
        expect(outcomes[0]).toBe("Unavailable");
        expect(new Set(outcomes)).toEqual(new Set(["Unavailable", "Unauthenticated"]));
        const refused = await failure(searchOn(cutOff, key.secret));
        expect(refused.rawMessage).toBe(`API key ${key.id} has been revoked`);
      } finally {
        await link.close();
      }
    });

    // Last: it stops the database under every replica.
    it("refuse created keys (UNAVAILABLE) on a replica that cannot reach the database for over 3 s, config keys still served; accept them again once it is back", async () => {
      const a = replicas[0] as TestReplica;
      const key = await newKey(a);
      fleet.postgres.pause();
      try {
        await sleep(4_000);
        const refused = await failure(searchOn(a, key.secret));
        expect(refused.code).toBe(Code.Unavailable);
        expect(refused.rawMessage).toContain(
          `cannot tell whether API key ${key.id} was revoked meanwhile; retry (another replica may answer)`,
        );
        await expect(searchOn(a, operator.secret)).resolves.toBeDefined();
      } finally {
        fleet.postgres.resume();
      }
      for (const deadline = Date.now() + 20_000; ; await sleep(200)) {
        const answer = await searchOn(a, key.secret).then(
          () => "ok",
          (error: unknown) => ConnectError.from(error),
        );
        if (answer === "ok") break;
        if (Date.now() > deadline) throw answer;
      }
    });
  },
);
