import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prng } from "../../bench/lib/skill-data.ts";
import { Provider, SearchType } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillScope, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { LoadingMode, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../../gen/ts/wayfind/v1/usage_pb.ts";
import { apiKey, clientWith } from "../support/auth.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

// Issue 15 property: random principals, random claimed contexts, random catalogs across tenants —
// no response, error message, count or event ever reveals another tenant's data.
const TENANTS = ["t0", "t1", "t2", "t3"];
const keys = TENANTS.map((tenant) => apiKey(`key-${tenant}`, { tenant, roles: ["admin"] }));
/**
 * Every tenant's data carries its marker; another tenant must never see it. One letter tells markers
 * apart ("t2" → "zqosecret"), so the search reads each as one word a single typo from any other. The
 * letters (tenants t0–t3, then their ghosts t5–t8) are chosen so that no tenant's is a keyboard
 * neighbour of another's or of a ghost's: typo repair weighs a neighbouring key less, and a ghost must
 * be exactly the slip the tenant it stands in for is.
 */
const marker = (tenant: string) => `zq${"qtoc-eunm"[Number(tenant.slice(1))]}secret`;

let wayfind: TestServer;
const toolNames = new Map<string, string[]>();

beforeAll(async () => {
  wayfind = await startTestServer({
    auth: { allow_unauthenticated: false, api_keys: keys.map((k) => k.entry) },
  });
  const random = prng(7);
  for (const [i, tenant] of TENANTS.entries()) {
    const secret = keys[i]?.secret ?? "";
    const names = Array.from(
      { length: 2 + Math.floor(random() * 4) },
      (_, n) => `${marker(tenant)}.tool${n}`,
    );
    toolNames.set(tenant, names);
    await clientWith(ToolDiscoveryService, wayfind.baseUrl, secret).registerTools({
      source: `${marker(tenant)}-source`,
      tools: names.map((name, n) => ({
        name,
        description: `Refund the invoice and send the weather report ${marker(tenant)} ${n}.`,
        loadingMode: n % 2 === 0 ? LoadingMode.DEFERRED : LoadingMode.ALWAYS,
      })),
    });
    await clientWith(SkillService, wayfind.baseUrl, secret).loadSkillPack({
      packName: `pack-${tenant}`,
      scope: SkillScope.TENANT,
      source: {
        case: "files",
        value: {
          files: [
            {
              path: "refund.skill.yaml",
              content: `name: refund.${marker(tenant)}\ntrigger: Refund an invoice.\nsteps: [Call ${names[0]} for the ${marker(tenant)} invoice.]\n`,
            },
          ],
        },
      },
    });
    await clientWith(UsageService, wayfind.baseUrl, secret).recordUsage({
      provider: Provider.ANTHROPIC,
      model: `model-${marker(tenant)}`,
      usage: { inputTokens: 100n, outputTokens: 10n },
      idempotencyKey: `usage-${marker(tenant)}`,
    });
  }
}, 30_000);
afterAll(() => wayfind.stop());

type Probe = (secret: string, caller: object, other: string) => Promise<unknown>;

/**
 * A tenant that does not exist ("t2" → "t7"), with as many tools under its own marker. Its marker is
 * as close to every real one (one character) as theirs are to each other, so typo repair treats both
 * alike.
 */
const ghostOf = (tenant: string) => `t${Number(tenant.slice(1)) + 5}`;
function namesOf(tenant: string): string[] {
  const n = Number(tenant.slice(1));
  if (n < TENANTS.length) return toolNames.get(tenant) ?? [];
  const real = `t${n - 5}`;
  return (toolNames.get(real) ?? []).map((name) => name.replace(marker(real), marker(tenant)));
}

/** What a naming probe sends: a tenant may see its own input again (its own search events). */
function inputsOf(probe: string, other: string): string[] {
  switch (probe) {
    case "searchTools":
      return [`refund ${marker(other)}`];
    case "regexSearch":
      return [`${marker(other)}.*`];
    case "searchSkills":
      return [`refund invoice ${marker(other)}`];
    case "getSkills":
      return [`refund.${marker(other)}`];
    default:
      return namesOf(other);
  }
}

/** Calls an adversarial tenant makes, each naming or searching for another tenant's data. */
const PROBES: Record<string, Probe> = {
  searchTools: (s, caller, other) =>
    clientWith(ToolDiscoveryService, wayfind.baseUrl, s).searchTools({
      caller,
      query: `refund ${marker(other)}`,
    }),
  regexSearch: (s, caller, other) =>
    clientWith(ToolDiscoveryService, wayfind.baseUrl, s).searchTools({
      caller,
      query: `${marker(other)}.*`,
      searchType: SearchType.REGEX,
    }),
  listAll: (s, caller) =>
    clientWith(ToolDiscoveryService, wayfind.baseUrl, s).listTools({ caller, showAllTools: true }),
  getTools: (s, caller, other) =>
    clientWith(ToolDiscoveryService, wayfind.baseUrl, s).getTools({
      caller,
      names: namesOf(other),
    }),
  resolveTool: (s, caller, other) =>
    clientWith(ToolDiscoveryService, wayfind.baseUrl, s).resolveTool({
      caller,
      name: namesOf(other)[0] ?? "",
    }),
  activate: (s, caller, other) =>
    clientWith(ToolDiscoveryService, wayfind.baseUrl, s).activateTools({
      caller: { runId: "r", ...caller },
      names: namesOf(other),
    }),
  renderPrompt: (s, caller) =>
    clientWith(ToolDiscoveryService, wayfind.baseUrl, s).renderToolPrompt({ caller }),
  sources: (s, caller) => clientWith(ToolDiscoveryService, wayfind.baseUrl, s).listToolSources({ caller }),
  searchSkills: (s, caller, other) =>
    clientWith(SkillService, wayfind.baseUrl, s).searchSkills({
      caller,
      query: `refund invoice ${marker(other)}`,
    }),
  listSkills: (s, caller) => clientWith(SkillService, wayfind.baseUrl, s).listSkills({ caller }),
  getSkills: (s, caller, other) =>
    clientWith(SkillService, wayfind.baseUrl, s).getSkills({ caller, names: [`refund.${marker(other)}`] }),
  relevantSkills: (s, caller) =>
    clientWith(SkillService, wayfind.baseUrl, s).getRelevantSkills({ caller, task: "refund an invoice" }),
  usageSummary: (s, caller) => clientWith(UsageService, wayfind.baseUrl, s).getUsageSummary({ caller }),
  watchEvents: async (s, caller, other) => {
    const abort = new AbortController();
    const seen: unknown[] = [];
    const timer = setTimeout(() => abort.abort(), 300);
    try {
      for await (const message of clientWith(ToolDiscoveryService, wayfind.baseUrl, s).watchToolEvents(
        { caller, filter: { fromOldest: true, tenantId: Math.random() < 0.5 ? other : "" } },
        { signal: abort.signal },
      )) {
        seen.push(message);
        if (seen.length > 50) break;
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    } finally {
      clearTimeout(timer);
    }
    return seen;
  },
};

/** Probes whose request names the other tenant's data: their answer must be the ghost's answer. */
const NAMING = new Set([
  "searchTools",
  "regexSearch",
  "getTools",
  "resolveTool",
  "activate",
  "searchSkills",
  "getSkills",
]);

/** What a call showed its caller: the response, or the error's code and message. */
async function shown(call: Promise<unknown>): Promise<string> {
  try {
    // A search_id is new and random on every search: it says nothing of any tenant.
    return JSON.stringify(await call, (key, value) =>
      key === "searchId" ? undefined : typeof value === "bigint" ? value.toString() : value,
    );
  } catch (error) {
    const e = ConnectError.from(error);
    return JSON.stringify({ code: e.code, message: e.rawMessage });
  }
}

describe("tenant isolation under adversarial callers", () => {
  it("never shows one tenant's tools, skills, usage, sources or events to another", async () => {
    const seed = Number(process.env.WAYFIND_PROPERTY_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const probes = Object.entries(PROBES);
    const sentBy = new Map(TENANTS.map((tenant) => [tenant, new Set<string>()]));
    for (let round = 0; round < 150; round++) {
      const me = Math.floor(random() * TENANTS.length);
      const own = TENANTS[me] ?? "";
      const other = pick(TENANTS.filter((t) => t !== own));
      // Whatever the caller claims: its own tenant, another, none, garbage; entitlements; narrowing.
      const caller = {
        ...(random() < 0.7 ? { tenantId: pick(["", own, other, `${other} `, "*", own.toUpperCase()]) } : {}),
        ...(random() < 0.3 ? { entitlements: [pick(["admin", other, "*"])] } : {}),
        ...(random() < 0.3 ? { narrowToTools: [pick(["*", `${marker(other)}.*`, "*.tool0"])] } : {}),
        ...(random() < 0.3 ? { sessionId: pick(["s", other]), runId: pick(["r", other]) } : {}),
      };
      const [name, probe] = pick(probes);
      const secret = keys[me]?.secret ?? "";
      const context = `seed ${seed}, round ${round}: ${name} as ${own} with ${JSON.stringify(caller)}`;
      let text = await shown(probe(secret, caller, other));
      if (NAMING.has(name)) {
        // It may echo what it was sent, but must answer exactly as for data that exists nowhere.
        const ghost = ghostOf(other);
        const missing = await shown(probe(secret, caller, ghost));
        expect(text.replaceAll(marker(other), "<M>"), context).toBe(missing.replaceAll(marker(ghost), "<M>"));
        text = missing;
        for (const input of inputsOf(name, other)) sentBy.get(own)?.add(input);
      } else {
        // Its own events may hold what it searched for earlier: its input, not another's data.
        const echoes = [...(sentBy.get(own) ?? [])].sort((a, b) => b.length - a.length);
        for (const echo of echoes) text = text.replaceAll(JSON.stringify(echo).slice(1, -1), "<sent>");
      }
      for (const tenant of TENANTS.filter((t) => t !== own))
        expect(text, context).not.toContain(marker(tenant));
    }
  }, 60_000);

  it("answers a name of another tenant's tool exactly as a name that exists nowhere", async () => {
    const asT0 = clientWith(ToolDiscoveryService, wayfind.baseUrl, keys[0]?.secret ?? "");
    const hidden = toolNames.get("t1")?.[0] ?? "";
    const missing = `${"x".repeat(hidden.length - 6)}.tool0`;
    const answer = async (name: string) => (await shown(asT0.resolveTool({ name }))).replace(name, "<name>");
    expect(await answer(hidden)).toBe(await answer(missing));
  });

  it("keeps a tenant's skill scores unchanged when another tenant loads skills", async () => {
    const asT0 = clientWith(SkillService, wayfind.baseUrl, keys[0]?.secret ?? "");
    const scores = async () =>
      (await asT0.searchSkills({ query: "refund invoice" })).skills.map((skill) => [skill.name, skill.score]);
    const before = await scores();
    expect(before.length).toBeGreaterThan(0);
    // Long skills full of the same words: they would shift N, df and the average length if shared.
    const filler = "Refund the invoice, then refund it again. ".repeat(40);
    await clientWith(SkillService, wayfind.baseUrl, keys[1]?.secret ?? "").loadSkillPack({
      packName: "long-t1",
      scope: SkillScope.TENANT,
      source: {
        case: "files",
        value: {
          files: Array.from({ length: 20 }, (_, i) => ({
            path: `long${i}.skill.yaml`,
            content: `name: long.refund${i}\ntrigger: Refund an invoice.\ndescription: ${filler}\nsteps: [Refund.]\n`,
          })),
        },
      },
    });
    expect(await scores()).toEqual(before);
  });
});
