import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SearchType } from "../../gen/ts/wayfind/v1/common_pb.ts";
import type { Event } from "../../gen/ts/wayfind/v1/events_pb.ts";
import { SkillFormat, SkillScope, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { LoadingMode, ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

// Who writes what, and what others then see (issue 12 "Writes are not scoped", "Hidden = missing").
const acme = { tenantId: "acme", sessionId: "s-a", runId: "r-a" };
const bravo = { tenantId: "bravo", sessionId: "s-b", runId: "r-b" };
const anonymous = { sessionId: "s-anon", runId: "r-anon" };
const asOperator = { headers: { "wayfind-role": "admin" } };

let wayfind: RouterTestServer;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-scope-"));
  writeFileSync(
    join(dir, "ops.jsonl"),
    `${JSON.stringify({ name: "status", description: "Show the status of the platform." })}\n`,
  );
  wayfind = await startRouterServer(
    {
      catalogs: [{ path: "ops.jsonl", namespace: "ops" }],
      // bravo may not see the operator's internal tools: they must look missing to it.
      visibility: [
        { match: { tenant: "acme" }, allow: ["*"] },
        { match: { tenant: "bravo" }, allow: ["*"], deny: ["internal.*"] },
        { match: {}, allow: ["*"] },
      ],
    },
    { dataDir: dir },
  );
});
afterAll(() => wayfind.stop());

const tools = () => wayfind.grpc(ToolDiscoveryService);
const skills = () => wayfind.grpc(SkillService);

function tool(name: string, description: string) {
  return { name, description, argsSchema: { type: "object" } };
}

describe("RegisterTools is scoped to the caller", () => {
  it("registers for the caller's tenant: that tenant finds the tools, another tenant finds nothing", async () => {
    await tools().registerTools({
      caller: acme,
      source: "crm",
      tools: [tool("crm.lookup_customer", "Look up a customer record by e-mail.")],
    });

    const own = await tools().searchTools({ caller: acme, query: "look up customer" });
    expect(own.tools.map((t) => t.name)).toContain("crm.lookup_customer");

    const search = await tools().searchTools({ caller: bravo, query: "look up customer" });
    expect(search.tools.map((t) => t.name)).not.toContain("crm.lookup_customer");
    const got = await tools().getTools({ caller: bravo, names: ["crm.lookup_customer"] });
    expect(got).toMatchObject({ tools: [], notFound: ["crm.lookup_customer"] });
    const listed = await tools().listTools({ caller: bravo, showAllTools: true });
    expect(listed.tools.map((t) => t.name)).toEqual(["ops.status"]);
    const resolved = await failure(tools().resolveTool({ caller: bravo, name: "crm.lookup_customer" }));
    const missing = await failure(tools().resolveTool({ caller: bravo, name: "crm.no_such_tool" }));
    expect(resolved.code).toBe(Code.NotFound);
    expect(resolved.rawMessage).toBe(missing.rawMessage.replace("no_such_tool", "lookup_customer"));
    const prompt = await tools().renderToolPrompt({ caller: bravo, includeDirectory: true });
    expect(prompt.text).not.toContain("lookup_customer");
  });

  it("lets two tenants use one source name: replace_source with no tools clears only the caller's own", async () => {
    await tools().registerTools({
      caller: acme,
      source: "shared",
      tools: [tool("notes.add", "Add a note.")],
    });
    const wipe = await tools().registerTools({
      caller: bravo,
      source: "shared",
      tools: [],
      replaceSource: true,
    });
    expect(wipe.removed).toBe(0);
    const got = await tools().getTools({ caller: acme, names: ["notes.add"] });
    expect(got.tools.map((t) => t.name)).toEqual(["notes.add"]);
  });

  it("answers a tenant registering a name another tenant holds exactly as for a fresh name", async () => {
    await tools().registerTools({
      caller: acme,
      source: "pay",
      tools: [tool("pay.refund", "Acme refunds.")],
    });
    const taken = await tools().registerTools({
      caller: bravo,
      source: "pay",
      tools: [tool("pay.refund", "Bravo refunds.")],
    });
    const fresh = await tools().registerTools({
      caller: bravo,
      source: "pay2",
      tools: [tool("pay.refund_fresh", "Bravo refunds.")],
    });
    expect({ ...taken, catalogFingerprint: "" }).toEqual({ ...fresh, catalogFingerprint: "" });
    const acmeView = await tools().getTools({ caller: acme, names: ["pay.refund"] });
    const bravoView = await tools().getTools({ caller: bravo, names: ["pay.refund"] });
    expect(acmeView.tools[0]?.description).toBe("Acme refunds.");
    expect(bravoView.tools[0]?.description).toBe("Bravo refunds.");
  });

  it("registers global tools for the operator; a tenant's tool of the same name shadows it for that tenant only", async () => {
    await tools().registerTools(
      { source: "deploys", tools: [tool("deploy.run", "The operator's deploy.")] },
      asOperator,
    );
    await tools().registerTools({
      caller: acme,
      source: "mine",
      tools: [tool("deploy.run", "Acme's deploy.")],
    });

    const forAcme = await tools().searchTools({
      caller: acme,
      query: "deploy.run",
      searchType: SearchType.EXACT,
    });
    expect(forAcme.tools.map((t) => t.description)).toEqual(["Acme's deploy."]);
    const forBravo = await tools().getTools({ caller: bravo, names: ["deploy.run"] });
    expect(forBravo.tools.map((t) => t.description)).toEqual(["The operator's deploy."]);
  });

  it("refuses an anonymous caller, saying what to set", async () => {
    const error = await failure(
      tools().registerTools({ caller: anonymous, source: "x", tools: [tool("x.y", "Y.")] }),
    );
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain("caller.tenant_id");
    expect(error.rawMessage).toContain("the operator (an admin credential bound to no tenant)");
  });
});

describe("LoadSkillPack GLOBAL scope", () => {
  const globalPack = (name: string) => ({
    packName: "core",
    scope: SkillScope.GLOBAL,
    source: {
      case: "files" as const,
      value: {
        files: [{ path: "a.skill.yaml", content: `name: ${name}\ntrigger: Always.\nsteps: [Do it.]\n` }],
      },
    },
  });

  it("is refused for a tenant, naming the operator role", async () => {
    const error = await failure(skills().loadSkillPack({ caller: acme, ...globalPack("core.takeover") }));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain("the operator (an admin credential bound to no tenant)");
    const got = await failure(skills().getSkills({ caller: bravo, names: ["core.takeover"] }));
    expect(got.code).toBe(Code.NotFound);
  });

  it("is accepted for the operator and served to every tenant", async () => {
    expect(await skills().loadSkillPack(globalPack("core.greet"), asOperator)).toMatchObject({ loaded: 1 });
    const got = await skills().getSkills({ caller: bravo, names: ["core.greet"] });
    expect(got.skills.map((s) => s.name)).toEqual(["core.greet"]);
  });
});

describe("ListToolSources", () => {
  beforeAll(async () => {
    await tools().registerTools({ caller: acme, source: "acme-src", tools: [tool("acme.one", "One.")] });
    await tools().registerTools({ caller: bravo, source: "bravo-src", tools: [tool("bravo.one", "One.")] });
    await tools().registerTools(
      { source: "internal-audit", tools: [tool("internal.audit", "Audit everything.")] },
      asOperator,
    );
  });
  const names = (sources: { name: string; tenantId: string }[]) =>
    sources.map((s) => `${s.tenantId}/${s.name}`);

  it("shows the operator every tenant's sources, each with its tenant", async () => {
    const { sources } = await tools().listToolSources({}, asOperator);
    expect(names(sources)).toEqual(
      expect.arrayContaining(["/catalog:ops", "acme/acme-src", "bravo/bravo-src"]),
    );
  });

  it("shows a tenant the global sources and its own, never another tenant's", async () => {
    const listed = names((await tools().listToolSources({ caller: bravo })).sources);
    expect(listed).toEqual(expect.arrayContaining(["/catalog:ops", "bravo/bravo-src"]));
    expect(listed.filter((name) => name.startsWith("acme/"))).toEqual([]);
  });

  it("leaves out, for a tenant, a global source whose tools are all hidden from it", async () => {
    const forBravo = (await tools().listToolSources({ caller: bravo })).sources.map((s) => s.name);
    const forAcme = (await tools().listToolSources({ caller: acme })).sources.map((s) => s.name);
    expect(forBravo).not.toContain("internal-audit");
    expect(forAcme).toContain("internal-audit");
  });

  it("shows a caller without a tenant the global sources only", async () => {
    const listed = names((await tools().listToolSources({ caller: anonymous })).sources);
    expect(listed).toContain("/catalog:ops");
    expect(listed.filter((name) => !name.startsWith("/"))).toEqual([]);
  });
});

describe("watch streams", () => {
  it("refuses a caller without a tenant that asks for a tenant's events", async () => {
    const stream = tools().watchToolEvents({ caller: anonymous, filter: { tenantId: "acme" } });
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: Code.PermissionDenied,
    });
  });

  it("gives a caller without a tenant only events emitted without one", async () => {
    const abort = new AbortController();
    const stream = tools()
      .watchToolEvents(
        { caller: anonymous, filter: { types: ["tool_search_query"] } },
        { signal: abort.signal },
      )
      [Symbol.asyncIterator]();
    expect((await stream.next()).value?.message.case).toBe("status");
    await tools().searchTools({ caller: acme, query: "acme secret plans" });
    await tools().searchTools({ caller: anonymous, query: "public status" });
    const first = await nextEvent(stream);
    abort.abort();
    expect(first.tenantId).toBe("");
    expect(first.attributes?.query).toBe("public status");
  });

  it("lets the operator watch a tenant it picks", async () => {
    const abort = new AbortController();
    const stream = tools()
      .watchToolEvents(
        { filter: { tenantId: "acme", types: ["tool_search_query"] } },
        { ...asOperator, signal: abort.signal },
      )
      [Symbol.asyncIterator]();
    expect((await stream.next()).value?.message.case).toBe("status");
    await tools().searchTools({ caller: acme, query: "acme quarterly report" });
    const first = await nextEvent(stream);
    abort.abort();
    expect(first).toMatchObject({ tenantId: "acme" });
  });
});

async function nextEvent(stream: AsyncIterator<{ message: { case: string | undefined; value?: unknown } }>) {
  for (;;) {
    const { value, done } = await stream.next();
    if (done) throw new Error("stream ended before an event arrived");
    if (value.message.case === "event") return value.message.value as Event;
  }
}

describe("tenant text names hidden tools exactly as missing ones", () => {
  // The tenant's skill and its own tool's description name another tenant's tool and a global tool
  // hidden from it. The output must be byte-identical before and after those tools exist, else the
  // tenant's text probes for them.
  const probe = `---
name: bravo.probe
trigger: Probe for hidden tools.
steps:
  - Call zeta.secret_export with the ledger.
  - Then call internal.reset_all to clean up.
  - Finish with bravo.cleanup.
---
`;

  async function outputs() {
    const got = await skills().getSkills({
      caller: bravo,
      names: ["bravo.probe"],
      format: SkillFormat.INJECTION,
    });
    // Its search_id is new and random each time: it says nothing of any tool.
    const { searchId: _id, ...relevant } = await skills().getRelevantSkills({
      caller: bravo,
      task: "probe for hidden tools",
    });
    return JSON.stringify(
      {
        skills: got.skills.map(({ lastUsedAt: _used, useCount: _count, ...rest }) => rest),
        formattedContext: got.formattedContext,
        relevant,
        prompt: (await tools().renderToolPrompt({ caller: bravo, includeDirectory: true })).text,
      },
      (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value),
    );
  }

  it("gives GetSkills, GetRelevantSkills and RenderToolPrompt the same bytes whether the hidden tools exist or not", async () => {
    await tools().registerTools({
      caller: bravo,
      source: "bravo-tools",
      tools: [
        {
          ...tool("bravo.cleanup", "Wraps internal.reset_all; compare zeta.secret_export."),
          loadingMode: LoadingMode.ALWAYS,
          tags: ["internal.reset_all"],
        },
      ],
    });
    await skills().loadSkillPack({
      caller: bravo,
      packName: "probes",
      scope: SkillScope.TENANT,
      source: { case: "files", value: { files: [{ path: "probe.skill.md", content: probe }] } },
    });
    const whileMissing = await outputs();

    await tools().registerTools({
      caller: { tenantId: "zeta" },
      source: "zeta",
      tools: [tool("zeta.secret_export", "Export the ledger.")],
    });
    await tools().registerTools(
      { source: "internal", tools: [tool("internal.reset_all", "Reset everything.")] },
      asOperator,
    );
    const whileHidden = await outputs();

    expect(whileHidden).toBe(whileMissing);
    expect(whileMissing).toContain("zeta.secret_export");
  });

  it("still hides, in the tenant's own text, a tool the caller's narrowing removed", async () => {
    const narrowed = { ...bravo, narrowToTools: ["ops.*"] };
    const got = await skills().getSkills({ caller: narrowed, names: ["bravo.probe"] });
    expect(got.skills[0]?.steps).toContain('Finish with tool_search for "cleanup".');
  });
});

describe("operator text names hidden tools exactly as missing ones", () => {
  // A global skill names a tool bravo may not see before and after it exists, and one that never
  // exists: bravo must not be able to tell which hidden names are real.
  const runbook = `---
name: ops.runbook
trigger: Recover the platform.
steps:
  - Check ops.status first.
  - Then call internal.purge_cache with the region.
  - If that fails, internal.drop_tables (never registered).
---
`;

  async function bravoSees() {
    const got = await skills().getSkills({ caller: bravo, names: ["ops.runbook"] });
    return got.skills[0]?.steps ?? [];
  }

  it("rewrites a hidden tool's name and a name of no tool alike, and keeps a visible one", async () => {
    await skills().loadSkillPack(
      {
        packName: "runbooks",
        scope: SkillScope.GLOBAL,
        source: { case: "files", value: { files: [{ path: "runbook.skill.md", content: runbook }] } },
      },
      asOperator,
    );
    const whileMissing = await bravoSees();
    await tools().registerTools(
      { source: "internal", tools: [tool("internal.purge_cache", "Purge the edge cache.")] },
      asOperator,
    );
    const whileHidden = await bravoSees();

    expect(whileHidden).toEqual(whileMissing);
    expect(whileHidden).toEqual([
      "Check ops.status first.",
      'Then call tool_search for "purge cache" with the region.',
      'If that fails, tool_search for "drop tables" (never registered).',
    ]);
  });
  it("rewrites a hidden tool under a namespace of the catalog whatever its words, in every skill answer", async () => {
    await tools().registerTools(
      { source: "internal", tools: [tool("internal.secret_payroll", "Read the payroll of every employee.")] },
      asOperator,
    );
    const payroll = `---
name: ops.payroll_review
trigger: Review the payroll before month end.
steps:
  - Compare internal.secret_payroll with internal.salary_bands and ops.status.
---
`;
    await skills().loadSkillPack(
      {
        packName: "payroll",
        scope: SkillScope.GLOBAL,
        source: { case: "files", value: { files: [{ path: "payroll.skill.md", content: payroll }] } },
      },
      asOperator,
    );
    const got = await skills().getSkills({ caller: bravo, names: ["ops.payroll_review"] });
    expect(got.skills[0]?.steps).toEqual([
      'Compare tool_search for "secret payroll" with tool_search for "salary bands" and ops.status.',
    ]);
    const relevant = await skills().getRelevantSkills({ caller: bravo, task: "review the payroll" });
    expect(relevant.skillNames).toContain("ops.payroll_review");
    expect(relevant.formattedContext).toContain('tool_search for "secret payroll"');
    expect(relevant.formattedContext).not.toContain("internal.");
    const forAcme = await skills().getSkills({ caller: acme, names: ["ops.payroll_review"] });
    expect(forAcme.skills[0]?.steps[0]).toContain("internal.secret_payroll with tool_search");
  });
});
