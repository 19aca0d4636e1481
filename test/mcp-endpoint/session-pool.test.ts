import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { apiKey } from "../support/auth.ts";
import { openMcpSession, pingStatus } from "../support/mcp-session.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * Issue 42: one MCP session pool for everyone. An observer key opened 2,000 sessions in 6 s and
 * evicted another tenant's idle session; now each credential and each tenant has a quota under the
 * global cap (server.mcp.max_sessions_per_credential, max_sessions_per_tenant, max_sessions). (Since
 * issue 45 an observer key opens none: the endpoint needs the agent role; a second agent key of the
 * tenant floods here.)
 */

const acmeFlood = apiKey("acme-flood", { tenant: "acme", roles: ["agent"] });
const acmeAgent = apiKey("acme-agent", { tenant: "acme", roles: ["agent"] });
const bravo = apiKey("bravo-agent", { tenant: "bravo", roles: ["agent"] });
const globex = apiKey("globex-agent", { tenant: "globex", roles: ["agent"] });

let wayfind: TestServer;
beforeEach(async () => {
  wayfind = await startTestServer({
    server: { mcp: { max_sessions: 4, max_sessions_per_credential: 2, max_sessions_per_tenant: 3 } },
    auth: {
      allow_unauthenticated: false,
      api_keys: [acmeFlood.entry, acmeAgent.entry, bravo.entry, globex.entry],
    },
  });
});
afterEach(() => wayfind.stop());

const open = (secret: string) => openMcpSession(wayfind.baseUrl, secret);
/** Whether the session still answers a ping (it is 404 once closed). */
const answers = async (secret: string, session: string) =>
  (await pingStatus(wayfind.baseUrl, secret, session)) === 200;

async function openMany(secret: string, count: number): Promise<string[]> {
  const sessions: string[] = [];
  for (let i = 0; i < count; i++) sessions.push(await open(secret));
  return sessions;
}

describe("MCP session quotas", () => {
  it("a key opening sessions without end closes only its own, never another tenant's idle one (it evicted one)", async () => {
    const idle = await open(bravo.secret);
    const flood = await openMany(acmeFlood.secret, 20);
    expect(await answers(bravo.secret, idle)).toBe(true);
    const alive = [];
    for (const session of flood) alive.push(await answers(acmeFlood.secret, session));
    // Its own quota: the two it opened last.
    expect(alive).toEqual([...Array(18).fill(false), true, true]);
  });

  it("a tenant's credentials together hold at most its quota: the tenant's session idle longest goes", async () => {
    const [first, second] = await openMany(acmeFlood.secret, 2);
    const agents = await openMany(acmeAgent.secret, 2);
    expect(await answers(acmeFlood.secret, first ?? "")).toBe(false);
    expect(await answers(acmeFlood.secret, second ?? "")).toBe(true);
    for (const session of agents) expect(await answers(acmeAgent.secret, session)).toBe(true);
  });

  it("at the global cap, the tenant holding the most sessions gives one up", async () => {
    const idle = await open(bravo.secret);
    const [oldest, ...rest] = [...(await openMany(acmeFlood.secret, 2)), await open(acmeAgent.secret)];
    const newcomer = await open(globex.secret);
    expect(await answers(bravo.secret, idle)).toBe(true);
    expect(await answers(globex.secret, newcomer)).toBe(true);
    expect(await answers(acmeFlood.secret, oldest ?? "")).toBe(false);
    expect(await answers(acmeFlood.secret, rest[0] ?? "")).toBe(true);
    expect(await answers(acmeAgent.secret, rest[1] ?? "")).toBe(true);
  });
});
