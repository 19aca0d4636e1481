import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyService } from "../../gen/ts/wayfind/v1/keys_pb.ts";
import { SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { METHOD_ROLES } from "../../src/auth/index.ts";
import { apiKey, clientWith, type Protocol } from "../support/auth.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// Issue 15: every RPC × every role × matching / foreign tenant, over the real server.
const SERVICES = [ToolDiscoveryService, SkillService, UsageService, KeyService];
const ROLES = ["agent", "observer", "admin"] as const;
const keys = Object.fromEntries(
  ROLES.map((role) => [role, apiKey(`acme-${role}`, { tenant: "acme", roles: [role] })]),
);
const operator = apiKey("operator", { roles: ["admin"] });

type Outcome = "admitted" | Code;

/** RPCs for the operator alone: they tell of every tenant. */
const OPERATOR_ONLY = new Set(["/wayfind.v1.ToolDiscoveryService/ListTenants"]);

/** The code of a call (a stream: its first message), "admitted" when credentials, role and tenant let it run. */
async function outcome(
  service: (typeof SERVICES)[number],
  method: string,
  token: string | undefined,
  tenantId: string,
  protocol: Protocol = "grpc",
): Promise<Outcome> {
  const client = clientWith(service, wayfind.baseUrl, token, protocol) as unknown as Record<
    string,
    (request: object, options: object) => Promise<unknown> | AsyncIterable<unknown>
  >;
  const name = method.charAt(0).toLowerCase() + method.slice(1);
  const call = client[name];
  if (!call) throw new Error(`no client method ${name}`);
  const abort = new AbortController();
  try {
    const result = call({ caller: { tenantId } }, { signal: abort.signal });
    if (Symbol.asyncIterator in (result as object)) {
      for await (const _ of result as AsyncIterable<unknown>) break;
    } else await result;
    return "admitted";
  } catch (error) {
    const code = ConnectError.from(error).code;
    // Anything but a refusal means the call got past authentication and admission.
    return code === Code.Unauthenticated || code === Code.PermissionDenied ? code : "admitted";
  } finally {
    abort.abort();
  }
}

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer({
    auth: {
      allow_unauthenticated: false,
      api_keys: [...Object.values(keys).map((k) => k.entry), operator.entry],
    },
  });
});
afterAll(() => wayfind.stop());

const methods = SERVICES.flatMap((service) =>
  service.methods.map((method) => ({
    service,
    method: method.name,
    path: `/${service.typeName}/${method.name}`,
  })),
);

describe("the role table", () => {
  it("declares a role for every RPC of every wayfind service, and nothing else", () => {
    expect(Object.keys(METHOD_ROLES).sort()).toEqual(methods.map((m) => m.path).sort());
  });
});

describe.each(methods)("$path", ({ service, method, path }) => {
  const needed = METHOD_ROLES[path];

  it("is UNAUTHENTICATED without a credential", async () => {
    expect(await outcome(service, method, undefined, "acme")).toBe(Code.Unauthenticated);
  });

  it.each(ROLES)(
    "with a %s key of the caller's own tenant: admitted exactly when the role suffices",
    async (role) => {
      // An operator-only RPC refuses a tenant's admin too (src/caller/authorize.ts).
      const allowed = (role === needed || role === "admin") && !OPERATOR_ONLY.has(path);
      expect(await outcome(service, method, keys[role]?.secret, "acme")).toBe(
        allowed ? "admitted" : Code.PermissionDenied,
      );
    },
  );

  it("is PERMISSION_DENIED for a caller.tenant_id other than the key's, whatever its role", async () => {
    expect(await outcome(service, method, keys.admin?.secret, "globex")).toBe(Code.PermissionDenied);
  });

  it("admits the operator (admin bound to no tenant) for any tenant", async () => {
    expect(await outcome(service, method, operator.secret, "globex")).toBe("admitted");
  });
});

describe("every protocol carries the credential the same way", () => {
  it.each(["grpc", "connect", "grpc-web"] as const)(
    "%s: a key is admitted, no key is UNAUTHENTICATED",
    async (protocol) => {
      expect(await outcome(ToolDiscoveryService, "SearchTools", keys.agent?.secret, "acme", protocol)).toBe(
        "admitted",
      );
      expect(await outcome(ToolDiscoveryService, "SearchTools", undefined, "acme", protocol)).toBe(
        Code.Unauthenticated,
      );
    },
  );
});
