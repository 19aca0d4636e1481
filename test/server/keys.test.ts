import { timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/ts/google/rpc/error_details_pb.ts";
import { KeyOrigin, KeyService } from "../../gen/ts/wayfind/v1/keys_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey, clientWith, type Protocol } from "../support/auth.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const operator = apiKey("operator", { roles: ["admin"] });
const acmeAdmin = apiKey("acme-admin", { tenant: "acme", roles: ["admin"] });
const acmeAgent = apiKey("acme-agent", { tenant: "acme", roles: ["agent"] });
const acmeObserver = apiKey("acme-observer", { tenant: "acme", roles: ["observer"] });
const acmeWebAdmin = apiKey("acme-web-admin", {
  tenant: "acme",
  roles: ["admin"],
  projects: ["web"],
  entitlements: ["beta"],
});
const globexAdmin = apiKey("globex-admin", { tenant: "globex", roles: ["admin"] });
/** An admin key of an hour (whole seconds: the config's timestamps). */
const HOUR_ADMIN_EXPIRES_MS = Math.floor(Date.now() / 1000) * 1000 + 3_600_000;
const acmeHourAdmin = apiKey("acme-hour-admin", {
  tenant: "acme",
  roles: ["admin"],
  expires_at: new Date(HOUR_ADMIN_EXPIRES_MS).toISOString(),
});
const declared = [operator, acmeAdmin, acmeAgent, acmeObserver, acmeWebAdmin, globexAdmin, acmeHourAdmin];

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer({
    auth: { allow_unauthenticated: false, api_keys: declared.map((key) => key.entry) },
  });
});
afterAll(() => wayfind.stop());

const keysAs = (secret: string, protocol: Protocol = "grpc") =>
  clientWith(KeyService, wayfind.baseUrl, secret, protocol);
/** An RPC an agent key may call: whether the server accepts the key. */
const searchWith = (secret: string) =>
  clientWith(ToolDiscoveryService, wayfind.baseUrl, secret).searchTools({ query: "weather" });

describe("the operator", () => {
  it("lists every tenant's keys, the config's first, never a secret or a hash", async () => {
    const { keys } = await keysAs(operator.secret).listApiKeys({});
    expect(keys.slice(0, declared.length).map((key) => key.id)).toEqual(declared.map((key) => key.entry.id));
    const configured = keys.find((key) => key.id === "globex-admin");
    expect(configured).toMatchObject({ tenantId: "globex", roles: ["admin"], origin: KeyOrigin.CONFIG });
    expect(configured?.createdAt).toBeUndefined();
    const listing = JSON.stringify(keys, (_, value) => (typeof value === "bigint" ? String(value) : value));
    for (const key of declared) {
      expect(listing).not.toContain(key.secret);
      expect(listing).not.toContain(key.entry.key_sha256);
    }
  });

  it("creates a key for any tenant whose secret the server accepts at once", async () => {
    const created = await keysAs(operator.secret).createApiKey({
      id: "globex-bot",
      tenantId: "globex",
      roles: ["agent"],
      projects: ["shop"],
      entitlements: ["beta"],
    });
    expect(created.secret).toMatch(/^wf_[A-Za-z0-9_-]{43}$/);
    expect(created.key).toMatchObject({
      id: "globex-bot",
      tenantId: "globex",
      roles: ["agent"],
      projects: ["shop"],
      entitlements: ["beta"],
      origin: KeyOrigin.CREATED,
    });
    expect(created.key?.createdAt).toBeDefined();
    expect([created.key?.expiresAt, created.key?.revokedAt]).toEqual([undefined, undefined]);
    await expect(searchWith(created.secret)).resolves.toBeDefined();
  });

  it("revokes a key: the next call with it is UNAUTHENTICATED", async () => {
    const { secret } = await keysAs(operator.secret).createApiKey({
      id: "to-revoke",
      tenantId: "acme",
      roles: ["agent"],
    });
    await expect(searchWith(secret)).resolves.toBeDefined();
    expect(await keysAs(operator.secret).revokeApiKey({ id: "to-revoke" })).toMatchObject({ revoked: true });
    const error = await failure(searchWith(secret));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toBe("API key to-revoke has been revoked");
  });

  it("answers revoked: false for a key revoked already, and lists when it was revoked", async () => {
    const client = keysAs(operator.secret);
    await client.createApiKey({ id: "revoked-twice", tenantId: "acme", roles: ["agent"] });
    await client.revokeApiKey({ id: "revoked-twice" });
    expect(await client.revokeApiKey({ id: "revoked-twice" })).toMatchObject({ revoked: false });
    const { keys } = await client.listApiKeys({});
    expect(keys.find((key) => key.id === "revoked-twice")?.revokedAt).toBeDefined();
  });

  it("cannot revoke a key declared in the config: FAILED_PRECONDITION saying where to remove it", async () => {
    const error = await failure(keysAs(operator.secret).revokeApiKey({ id: "acme-agent" }));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toContain("auth.api_keys");
    await expect(searchWith(acmeAgent.secret)).resolves.toBeDefined();
  });

  it("creates a key that expires expires_in_seconds from now", async () => {
    const before = Date.now();
    const { key } = await keysAs(operator.secret).createApiKey({
      tenantId: "acme",
      roles: ["observer"],
      expiry: { case: "expiresInSeconds", value: 3600n },
    });
    expect(key?.id).toMatch(/^k_/);
    const expiresAt = key?.expiresAt ? timestampDate(key.expiresAt).getTime() : 0;
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_600_000);
  });

  it("is ALREADY_EXISTS creating a key with an id in use, a config-declared one too", async () => {
    const error = await failure(
      keysAs(operator.secret).createApiKey({ id: "acme-agent", tenantId: "acme", roles: ["agent"] }),
    );
    expect(error.code).toBe(Code.AlreadyExists);
  });
});

describe("an admin bound to a tenant", () => {
  it("lists only its own tenant's keys", async () => {
    await keysAs(operator.secret).createApiKey({ id: "globex-listed", tenantId: "globex", roles: ["agent"] });
    const { keys } = await keysAs(acmeAdmin.secret).listApiKeys({});
    expect(keys.map((key) => key.id)).toEqual(
      expect.arrayContaining(["acme-admin", "acme-agent", "acme-observer", "acme-web-admin"]),
    );
    expect(keys.every((key) => key.tenantId === "acme")).toBe(true);
  });

  it("creates keys for its own tenant when tenant_id is left empty", async () => {
    const { key, secret } = await keysAs(acmeAdmin.secret).createApiKey({ roles: ["agent"] });
    expect(key?.tenantId).toBe("acme");
    await expect(searchWith(secret)).resolves.toBeDefined();
  });

  it("is PERMISSION_DENIED creating a key for another tenant", async () => {
    const error = await failure(
      keysAs(acmeAdmin.secret).createApiKey({ id: "intruder", tenantId: "globex", roles: ["admin"] }),
    );
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain('tenant_id "globex" is not your tenant');
  });

  it("answers another tenant's key id as NOT_FOUND, exactly as an id no key has", async () => {
    const client = keysAs(acmeAdmin.secret);
    const hidden = await failure(client.revokeApiKey({ id: "globex-admin" }));
    const missing = await failure(client.revokeApiKey({ id: "nobody-here" }));
    expect(hidden.code).toBe(Code.NotFound);
    expect(hidden.rawMessage.replace("globex-admin", "<id>")).toBe(
      missing.rawMessage.replace("nobody-here", "<id>"),
    );
    await expect(searchWith(globexAdmin.secret)).resolves.toBeDefined();
  });

  it("grants no project or entitlement its own credential lacks", async () => {
    const client = keysAs(acmeWebAdmin.secret);
    const anyProject = await failure(client.createApiKey({ roles: ["agent"] }));
    const otherProject = await failure(client.createApiKey({ roles: ["agent"], projects: ["mobile"] }));
    const unheld = await failure(
      client.createApiKey({ roles: ["agent"], projects: ["web"], entitlements: ["gold"] }),
    );
    expect([anyProject.code, otherProject.code, unheld.code]).toEqual([
      Code.PermissionDenied,
      Code.PermissionDenied,
      Code.PermissionDenied,
    ]);
    const { key } = await client.createApiKey({
      roles: ["agent"],
      projects: ["web"],
      entitlements: ["beta"],
    });
    expect(key).toMatchObject({ tenantId: "acme", projects: ["web"], entitlements: ["beta"] });
  });
});

describe("roles", () => {
  it.each([
    ["an observer", acmeObserver.secret],
    ["an agent", acmeAgent.secret],
  ])("%s is PERMISSION_DENIED on every KeyService RPC", async (_, secret) => {
    const client = keysAs(secret);
    const calls = [
      client.listApiKeys({}),
      client.createApiKey({ roles: ["agent"] }),
      client.revokeApiKey({ id: "acme-agent" }),
    ];
    for (const call of calls) expect((await failure(call)).code).toBe(Code.PermissionDenied);
  });
});

describe("bad input is INVALID_ARGUMENT saying what to fix", () => {
  const create = (fields: Parameters<ReturnType<typeof keysAs>["createApiKey"]>[0]) =>
    failure(keysAs(operator.secret).createApiKey({ tenantId: "acme", roles: ["agent"], ...fields }));

  it("an unknown role", async () => {
    const error = await create({ roles: ["agent", "root"] });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe('invalid key: roles[1] "root" is not a role; use agent, observer, admin');
  });

  it("an id with characters a key id may not hold", async () => {
    const error = await create({ id: "my key" });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("id \"my key\" may hold only letters, digits, '.', '_' and '-'");
  });

  it("an expiry in the past", async () => {
    const error = await create({ expiry: { case: "expiresAt", value: timestampFromMs(Date.now() - 1000) } });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe("invalid key: expires_at must be in the future");
  });

  it("no tenant for a key without role admin", async () => {
    const error = await create({ tenantId: "" });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("tenant_id is required");
  });

  it("too many roles, projects or entitlements, every problem listed in the BadRequest details", async () => {
    const error = await create({
      roles: ["agent", "observer", "admin", "agent"],
      projects: Array.from({ length: 101 }, (_, i) => `p${i}`),
      entitlements: ["x".repeat(129)],
    });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe(
      "invalid key: roles must have 1–3 roles, got 4 (and 2 more in the details)",
    );
    const violations = error.findDetails(BadRequestSchema)[0]?.fieldViolations ?? [];
    expect(violations.map((violation) => [violation.field, violation.description])).toEqual([
      ["roles", "roles must have 1–3 roles, got 4"],
      ["projects", "projects must have 0–100 projects, got 101"],
      ["entitlements[0]", "entitlements[0] must have 1–128 characters each, got 129"],
    ]);
  });

  it("a revoke without an id", async () => {
    const error = await failure(keysAs(operator.secret).revokeApiKey({}));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("id is required");
  });
});

describe("a browser console", () => {
  it.each(["connect", "grpc-web"] as const)("manages keys over %s", async (protocol) => {
    const client = keysAs(acmeAdmin.secret, protocol);
    const { key } = await client.createApiKey({ id: `console-${protocol}`, roles: ["observer"] });
    const { keys } = await client.listApiKeys({});
    expect(keys.map((listed) => listed.id)).toContain(key?.id);
    expect(await client.revokeApiKey({ id: `console-${protocol}` })).toMatchObject({ revoked: true });
  });
});

describe("issue 42: key administration under attack", () => {
  it("refuses a key expiring after year 9999 (INVALID_ARGUMENT), so ListApiKeys over Connect JSON keeps working", async () => {
    const client = keysAs(acmeAdmin.secret, "connect");
    const tooLate = await failure(
      client.createApiKey({
        roles: ["agent"],
        expiry: { case: "expiresAt", value: timestampFromMs(Date.UTC(10_000, 0, 1)) },
      }),
    );
    expect(tooLate.code).toBe(Code.InvalidArgument);
    expect(tooLate.rawMessage).toContain("expires_at must be at the latest 9999-12-31T23:59:59.999Z");
    await client.createApiKey({
      id: "until-9999",
      roles: ["agent"],
      expiry: { case: "expiresAt", value: timestampFromMs(Date.UTC(10_000, 0, 1) - 1) },
    });
    const { keys } = await client.listApiKeys({});
    const listed = keys.find((key) => key.id === "until-9999")?.expiresAt;
    expect(listed ? timestampDate(listed).toISOString() : "").toBe("9999-12-31T23:59:59.999Z");
  });

  it("a 1-hour admin key creates keys that expire with it, never later (it minted never-expiring admin keys)", async () => {
    const client = keysAs(acmeHourAdmin.secret);
    const { key } = await client.createApiKey({ roles: ["admin"] });
    expect(key?.expiresAt ? timestampDate(key.expiresAt).getTime() : 0).toBe(HOUR_ADMIN_EXPIRES_MS);
    const later = await failure(
      client.createApiKey({ roles: ["admin"], expiry: { case: "expiresInSeconds", value: 7_200n } }),
    );
    expect(later.code).toBe(Code.PermissionDenied);
    expect(later.rawMessage).toContain("a key you create may not outlive it");
    const { key: sooner } = await client.createApiKey({
      roles: ["agent"],
      expiry: { case: "expiresInSeconds", value: 60n },
    });
    expect(sooner?.expiresAt).toBeDefined();
  });

  it("another tenant's key id behaves exactly as a free id (CreateApiKey) and a missing one (RevokeApiKey)", async () => {
    await keysAs(operator.secret).createApiKey({ id: "shared-name", tenantId: "globex", roles: ["agent"] });
    const acme = keysAs(acmeAdmin.secret);
    const { key, secret } = await acme.createApiKey({ id: "shared-name", roles: ["agent"] });
    expect(key).toMatchObject({ id: "shared-name", tenantId: "acme" });
    await expect(searchWith(secret)).resolves.toBeDefined();
    const foreign = await failure(acme.revokeApiKey({ id: "globex-listed" }));
    const missing = await failure(acme.revokeApiKey({ id: "no-such-key" }));
    expect(foreign.code).toBe(Code.NotFound);
    expect(foreign.rawMessage.replace("globex-listed", "<id>")).toBe(
      missing.rawMessage.replace("no-such-key", "<id>"),
    );
    const named = await failure(acme.revokeApiKey({ id: "shared-name", tenantId: "globex" }));
    expect(named.code).toBe(Code.PermissionDenied);

    // The operator names whose key when two tenants have the id.
    const ops = keysAs(operator.secret);
    const ambiguous = await failure(ops.revokeApiKey({ id: "shared-name" }));
    expect(ambiguous.code).toBe(Code.InvalidArgument);
    expect(ambiguous.rawMessage).toContain('("acme", "globex")');
    expect(await ops.revokeApiKey({ id: "shared-name", tenantId: "globex" })).toMatchObject({
      revoked: true,
    });
    await expect(searchWith(secret)).resolves.toBeDefined();
  });
});
