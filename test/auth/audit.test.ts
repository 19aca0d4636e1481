import { Code } from "@connectrpc/connect";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { apiKey, clientWith } from "../support/auth.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// Issue 15 "Audit": a log line for every denied call (principal, method, reason; never the secret) and a count.
const agent = apiKey("audited-agent", { tenant: "acme", roles: ["agent"] });
const lines: Record<string, unknown>[] = [];

let wayfind: TestServer;
beforeAll(async () => {
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  wayfind = await startTestServer(
    { auth: { allow_unauthenticated: false, api_keys: [agent.entry] } },
    { logger },
  );
});
afterAll(() => wayfind.stop());

const denials = () => lines.filter((line) => line.msg === "call denied");

describe("denied calls", () => {
  it("log who, what and why for a wrong role, never the key", async () => {
    const error = await failure(
      clientWith(SkillService, wayfind.baseUrl, agent.secret).loadSkillPack({ caller: { tenantId: "acme" } }),
    );
    expect(error.code).toBe(Code.PermissionDenied);
    const line = denials().find((entry) => entry.method === "/wayfind.v1.SkillService/LoadSkillPack");
    expect(line).toMatchObject({
      level: 40,
      principal: "key:acme/audited-agent",
      code: "permission_denied",
      tenant: "acme",
      reason: "LoadSkillPack needs the admin role; this credential has role agent",
    });
    expect(JSON.stringify(lines)).not.toContain(agent.secret);
  });

  it("log an unknown key without echoing it", async () => {
    const guess = "wf_guessed-secret-that-must-not-be-logged";
    await failure(clientWith(ToolDiscoveryService, wayfind.baseUrl, guess).listTools({}));
    const line = denials().find((entry) => entry.code === "unauthenticated");
    expect(line).toMatchObject({
      method: "/wayfind.v1.ToolDiscoveryService/ListTools",
      reason: "API key is not known to this server",
    });
    expect(JSON.stringify(lines)).not.toContain(guess);
  });

  it("are counted in wayfind_calls_denied_total by method and code", async () => {
    await failure(clientWith(ToolDiscoveryService, wayfind.baseUrl, undefined).searchTools({ query: "x" }));
    const metrics = await (await fetch(`${wayfind.baseUrl}/metrics`)).text();
    expect(metrics).toContain(
      'wayfind_calls_denied_total{method="/wayfind.v1.ToolDiscoveryService/SearchTools",code="unauthenticated"} 1',
    );
    expect(metrics).toContain(
      'wayfind_calls_denied_total{method="/wayfind.v1.SkillService/LoadSkillPack",code="permission_denied"} 1',
    );
  });
});
