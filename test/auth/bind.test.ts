import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey } from "../support/auth.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

// Issue 15 "Binding rules": the credential decides the tenant; the CallerContext may only narrow it.
const plain = apiKey("plain", { tenant: "acme", roles: ["agent"] });
const finance = apiKey("finance", { tenant: "acme", roles: ["agent"], entitlements: ["finance"] });
const oneProject = apiKey("one-project", { tenant: "acme", roles: ["agent"], projects: ["apollo"] });
const globex = apiKey("globex", { tenant: "globex", roles: ["agent"] });
const twoProjects = apiKey("two-projects", {
  tenant: "acme",
  roles: ["agent"],
  projects: ["apollo", "gemini"],
});

let wayfind: RouterTestServer;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-bind-"));
  writeFileSync(
    join(dir, "tools.jsonl"),
    [
      { name: "billing.refund", description: "Refund an invoice to the customer." },
      { name: "weather.forecast", description: "Forecast the weather for a city." },
    ]
      .map((tool) => JSON.stringify(tool))
      .join("\n"),
  );
  writeFileSync(
    join(dir, "maps.jsonl"),
    JSON.stringify({ name: "maps.route", description: "Route between two places." }),
  );
  wayfind = await startRouterServer(
    {
      catalogs: [
        { path: "tools.jsonl", loading_mode: "always" },
        { path: "maps.jsonl", loading_mode: "deferred" },
      ],
      visibility: [
        { match: { tenant: "globex" }, allow: ["maps.*"] },
        { match: { tenant: "acme", entitlements: ["finance"] }, allow: ["*"] },
        { match: { tenant: "acme" }, allow: ["weather.*", "maps.*"] },
      ],
      auth: {
        allow_unauthenticated: false,
        api_keys: [plain.entry, finance.entry, oneProject.entry, twoProjects.entry, globex.entry],
      },
    },
    { dataDir: dir },
  );
});
afterAll(() => wayfind.stop());

const tools = (secret: string) => wayfind.grpc(ToolDiscoveryService, { token: secret });
const names = async (secret: string, caller: object = {}) =>
  (await tools(secret).listTools({ caller })).tools.map((tool) => tool.name).sort();

describe("the tenant comes from the credential", () => {
  it("fills an empty caller.tenant_id with the key's tenant", async () => {
    expect(await names(plain.secret)).toEqual(["weather.forecast"]);
  });

  it("refuses another tenant with PERMISSION_DENIED and never answers for it", async () => {
    const error = await failure(tools(plain.secret).listTools({ caller: { tenantId: "globex" } }));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain(`caller.tenant_id "globex" is not this credential's tenant`);
  });
});

describe("entitlements only narrow", () => {
  it("gives a key's entitlements to a caller that claims none", async () => {
    expect(await names(finance.secret)).toEqual(["billing.refund", "weather.forecast"]);
  });

  it("lets a caller drop an entitlement it holds", async () => {
    expect(await names(finance.secret, { entitlements: ["finance"] })).toEqual([
      "billing.refund",
      "weather.forecast",
    ]);
  });

  it("refuses an entitlement the key does not hold", async () => {
    const error = await failure(tools(plain.secret).listTools({ caller: { entitlements: ["finance"] } }));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain(`"finance", which this credential does not hold`);
  });

  it("narrow_to_tools narrows what the key sees", async () => {
    expect(await names(finance.secret, { narrowToTools: ["billing.*"] })).toEqual(["billing.refund"]);
  });
});

describe("projects", () => {
  it("puts a one-project key's calls in its project", async () => {
    await tools(oneProject.secret).activateTools({ caller: { runId: "r1" }, names: ["weather.forecast"] });
    const error = await failure(tools(oneProject.secret).listTools({ caller: { projectId: "gemini" } }));
    expect(error.code).toBe(Code.PermissionDenied);
  });

  it("asks a key of several projects to name one of them", async () => {
    const error = await failure(tools(twoProjects.secret).listTools({ caller: {} }));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain("send caller.project_id naming one of them");
    await expect(
      tools(twoProjects.secret).listTools({ caller: { projectId: "gemini" } }),
    ).resolves.toBeDefined();
  });
});

describe("run and session ids are scoped by tenant", () => {
  it("a run id guessed by another tenant sees none of the run's activations, and touches none", async () => {
    await tools(plain.secret).activateTools({ caller: { runId: "r-shared" }, names: ["maps.route"] });
    expect(await names(plain.secret, { runId: "r-shared" })).toContain("maps.route");

    expect(await names(globex.secret, { runId: "r-shared" })).not.toContain("maps.route");
    await tools(globex.secret).deactivateTools({ caller: { runId: "r-shared" }, names: ["maps.route"] });
    expect(await names(plain.secret, { runId: "r-shared" })).toContain("maps.route");
  });
});
