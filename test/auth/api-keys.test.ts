import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { ApiKeyStore, KeyBook, LocalKeyRecords } from "../../src/auth/index.ts";
import { applyMigrations, openDatabase } from "../../src/database/sqlite.ts";
import { allMigrations } from "../../src/server/migrations.ts";
import { apiKey, clientWith } from "../support/auth.ts";
import { CLI } from "../support/cli.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const declared = apiKey("declared", { tenant: "acme", roles: ["agent"] });
const expired = apiKey("old", { tenant: "acme", roles: ["agent"], expires_at: "2020-01-01T00:00:00Z" });

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer({
    auth: { allow_unauthenticated: false, api_keys: [declared.entry, expired.entry] },
  });
});
afterAll(() => wayfind.stop());

const search = (token: string | undefined) =>
  clientWith(ToolDiscoveryService, wayfind.baseUrl, token).searchTools({ query: "weather" });

/**
 * `wayfind keys …` with the running server's config, as an operator runs it: its data folder, or
 * (a replica on PostgreSQL) the fleet's database.
 */
async function keysCli(...args: string[]): Promise<string> {
  // Not execFileSync: a replica in this process must go on answering the shared database meanwhile.
  const { stdout } = await promisify(execFile)(process.execPath, [
    CLI,
    "keys",
    ...args,
    "--config",
    wayfind.config.configFile ?? "",
  ]);
  return stdout;
}

describe("API keys declared in the config", () => {
  it("admit a call that sends the key", async () => {
    await expect(search(declared.secret)).resolves.toBeDefined();
  });

  it("refuse an expired key, saying it expired", async () => {
    const error = await failure(search(expired.secret));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toContain("API key old expired at 2020-01-01");
  });

  it("refuse an unknown key and a credential that is not a bearer token", async () => {
    expect((await failure(search("wf_not-a-key"))).code).toBe(Code.Unauthenticated);
    const malformed = clientWith(ToolDiscoveryService, wayfind.baseUrl, undefined).searchTools(
      { query: "weather" },
      { headers: { authorization: "Basic dXNlcjpwYXNz" } },
    );
    const error = await failure(malformed);
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toContain('authorization must be "Bearer <API key or token>"');
  });
});

describe("wayfind keys, while the server runs", () => {
  it("creates a key (the secret printed once, alone on stdout) that the server accepts at once", async () => {
    const secret = (
      await keysCli("create", "--tenant", "acme", "--role", "agent", "--id", "cli-made")
    ).trim();
    expect(secret).toMatch(/^wf_[A-Za-z0-9_-]{43}$/);
    await expect(search(secret)).resolves.toBeDefined();
    const listing = await keysCli("list");
    expect(listing).toContain("cli-made  tenant=acme  roles=agent");
    expect(listing).not.toContain(secret);
  });

  it("revokes a key: the next call with it is UNAUTHENTICATED", async () => {
    const secret = (
      await keysCli("create", "--tenant", "acme", "--role", "agent", "--id", "to-revoke")
    ).trim();
    await expect(search(secret)).resolves.toBeDefined();
    expect(await keysCli("revoke", "to-revoke")).toBe("revoked to-revoke\n");
    const error = await failure(search(secret));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toBe("API key to-revoke has been revoked");
  });

  it("revokes by id, asking whose when two tenants have a key of that id", async () => {
    await keysCli("create", "--tenant", "acme", "--role", "agent", "--id", "twin");
    await keysCli("create", "--tenant", "globex", "--role", "agent", "--id", "twin");
    await expect(keysCli("revoke", "twin")).rejects.toThrow(
      /keys of tenants "acme", "globex" have id twin; say whose with --tenant/,
    );
    expect(await keysCli("revoke", "twin", "--tenant", "globex")).toBe("revoked twin\n");
  });

  it("stores only the key's SHA-256, never the secret", async () => {
    const secret = (await keysCli("create", "--tenant", "acme", "--role", "agent")).trim();
    await search(secret); // a replica's copy has the key once a call with it passed
    const db = openDatabase(join(wayfind.dataDir, "wayfind.db"), allMigrations);
    try {
      const dump = JSON.stringify(db.prepare("SELECT * FROM api_keys").all());
      expect(dump).not.toContain(secret);
      expect(dump).not.toContain(secret.slice(3));
    } finally {
      db.close();
    }
  });
});

/** A book of the keys in a fresh in-memory database, and the store that authenticates with them. */
function keysInMemory(retentionDays?: number) {
  const db = openDatabase(":memory:", allMigrations);
  const store = new ApiKeyStore(db);
  return { db, store, book: new KeyBook(new LocalKeyRecords(db, () => store.changed()), [], retentionDays) };
}

describe("KeyBook", () => {
  it("refuses a key without tenant unless it is an admin (the operator)", async () => {
    const { db, book } = keysInMemory();
    await expect(
      book.create({ tenant: "", roles: ["agent"], projects: [], entitlements: [] }),
    ).rejects.toThrow(/tenant/);
    expect(
      (await book.create({ tenant: "", roles: ["admin"], projects: [], entitlements: [] })).key.tenant,
    ).toBe("");
    db.close();
  });

  const DAY_MS = 86_400_000;
  const grant = { tenant: "acme", roles: ["agent" as const], projects: [], entitlements: [] };

  it("deletes revoked and expired keys once the retention period has passed (issue 42: revoked keys were listed forever)", async () => {
    const { db, book } = keysInMemory(30);
    const t0 = Date.now();
    await book.create({ ...grant, id: "revoked" }, t0);
    await book.create({ ...grant, id: "expiring", expiresAtMs: t0 + 60_000 }, t0);
    await book.create({ ...grant, id: "kept" }, t0);
    await book.revoke("acme", "revoked");
    const ids = async (now: number) => (await book.list(now)).map((key) => key.id).sort();
    expect(await ids(t0 + 29 * DAY_MS)).toEqual(["expiring", "kept", "revoked"]);
    expect(await ids(t0 + 31 * DAY_MS)).toEqual(["kept"]);
    db.close();
  });

  it("keeps key ids unique within a tenant only: another tenant's id is free (issue 42: ids were an existence oracle)", async () => {
    const { db, store, book } = keysInMemory();
    const acme = await book.create({ ...grant, id: "bot" });
    const globex = await book.create({ ...grant, tenant: "globex", id: "bot" });
    expect([acme.key.tenant, globex.key.tenant]).toEqual(["acme", "globex"]);
    await expect(book.create({ ...grant, id: "bot" })).rejects.toThrow(/exists/);
    expect(await book.revoke("globex", "bot")).toBe(true);
    expect(store.find(acme.secret)?.revokedAtMs).toBeUndefined();
    expect(store.find(globex.secret)?.revokedAtMs).toBeDefined();
    expect((await book.withId("bot")).map((key) => [key.tenant, key.revokedAtMs !== undefined])).toEqual([
      ["acme", false],
      ["globex", true],
    ]);
    db.close();
  });

  it("brings an expiry stored past year 9999 down to the latest a Timestamp carries in JSON (issue 42: ListApiKeys broke)", async () => {
    const db = openDatabase(":memory:", []);
    const before = allMigrations.filter((migration) => migration.id !== "auth/002-tenant-scoped-key-ids");
    applyMigrations(db, before);
    db.prepare(
      `INSERT INTO api_keys (id, key_sha256, tenant_id, roles_json, entitlements_json, projects_json, created_at_ms, expires_at_ms)
       VALUES ('far', 'h1', 'acme', '["agent"]', '[]', '[]', 1, ?), ('never', 'h2', 'acme', '["agent"]', '[]', '[]', 1, NULL)`,
    ).run(8.64e15);
    applyMigrations(db, allMigrations);
    const book = new KeyBook(new LocalKeyRecords(db));
    expect(new Date((await book.get("acme", "far"))?.expiresAtMs ?? 0).toISOString()).toBe(
      "9999-12-31T23:59:59.999Z",
    );
    expect((await book.get("acme", "never"))?.expiresAtMs).toBeUndefined();
    await expect(book.create({ ...grant, expiresAtMs: Date.UTC(10_000, 0, 1) })).rejects.toThrow(
      /9999-12-31/,
    );
    db.close();
  });
});
