import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { KeyService } from "../../gen/ts/wayfind/v1/keys_pb.ts";
import { TenantOrigin, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { apiKey } from "../support/auth.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

const asOperator = { headers: { "wayfind-role": "admin" } };
const globexAdmin = apiKey("globex-admin", { tenant: "globex", roles: ["admin"] });

let wayfind: RouterTestServer;
beforeAll(async () => {
  wayfind = await startRouterServer({
    auth: { api_keys: [globexAdmin.entry] },
    visibility: [
      { match: { tenant: "acme" }, allow: ["*"] },
      { match: {}, allow: ["*"] },
    ],
  });
  // initech records usage; umbrella only searches (an event); hooli gets a key over the API.
  await wayfind.grpc(UsageService).recordUsage({
    caller: { tenantId: "initech" },
    provider: Provider.ANTHROPIC,
    model: "claude-sonnet-4-5",
    usage: { inputTokens: 10n, outputTokens: 1n },
    idempotencyKey: "first",
  });
  await wayfind
    .grpc(ToolDiscoveryService)
    .searchTools({ caller: { tenantId: "umbrella" }, query: "anything" });
  // A search reports its event after it answers: on a PostgreSQL replica, through the change log
  // (src/replication/events.ts), so it may not be in the log yet when the next call starts.
  await vi.waitFor(() => expect(wayfind.server.events.tenantIds("", 10)).toContain("umbrella"), {
    timeout: 10_000,
  });
  await wayfind
    .grpc(KeyService)
    .createApiKey({ tenantId: "hooli", roles: ["agent"], id: "hooli-agent" }, asOperator);
});
afterAll(() => wayfind.stop());

describe("ListTenants", () => {
  it("lists, for the operator, the tenants of keys, rules, usage and events, in order, with where each was seen", async () => {
    const { tenants, nextPageToken } = await wayfind.grpc(ToolDiscoveryService).listTenants({}, asOperator);
    expect(tenants.map((t) => [t.tenantId, t.seenIn])).toEqual([
      ["acme", [TenantOrigin.VISIBILITY_RULE]],
      ["globex", [TenantOrigin.API_KEY]],
      ["hooli", [TenantOrigin.API_KEY]],
      ["initech", [TenantOrigin.USAGE, TenantOrigin.EVENTS]],
      ["umbrella", [TenantOrigin.EVENTS]],
    ]);
    expect(nextPageToken).toBe("");
  });

  it("pages through them, each tenant once", async () => {
    const client = wayfind.grpc(ToolDiscoveryService);
    const first = await client.listTenants({ pageSize: 2 }, asOperator);
    const second = await client.listTenants({ pageSize: 2, pageToken: first.nextPageToken }, asOperator);
    const third = await client.listTenants({ pageSize: 2, pageToken: second.nextPageToken }, asOperator);
    expect([first, second, third].map((page) => page.tenants.map((t) => t.tenantId))).toEqual([
      ["acme", "globex"],
      ["hooli", "initech"],
      ["umbrella"],
    ]);
    expect(third.nextPageToken).toBe("");
  });

  it("refuses a page token it did not make", async () => {
    const error = await failure(
      wayfind.grpc(ToolDiscoveryService).listTenants({ pageToken: "not a token!" }, asOperator),
    );
    expect(error.code).toBe(Code.InvalidArgument);
  });

  it("is the operator's alone: a tenant's admin learns nothing of the others", async () => {
    const client = wayfind.grpc(ToolDiscoveryService, { token: globexAdmin.secret });
    const error = await failure(client.listTenants({}));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain("operator");
  });
});
