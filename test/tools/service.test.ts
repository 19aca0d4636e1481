import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import { ActivationStore, compileLazyGroups } from "../../src/activation/index.ts";
import { ANONYMOUS_CALLER } from "../../src/caller/caller.ts";
import { openDatabase } from "../../src/database/sqlite.ts";
import { IndexHost, ToolRegistry } from "../../src/discovery/index.ts";
import { allMigrations } from "../../src/server/migrations.ts";
import { ToolService } from "../../src/tools/service.ts";
import { notFoundMessage } from "./helpers.ts";

async function service(
  toolSearch: { enabled: boolean; alwaysLoadedPatterns: string[] },
  options: { denied?: string[]; aliases?: Record<string, string> } = {},
) {
  const db = openDatabase(":memory:", allMigrations);
  const registry = new ToolRegistry(db, { aliases: options.aliases ?? {} });
  await registry.register("src", [
    { name: "fs.read", description: "Read a file.", loadingMode: "deferred" },
    {
      name: "git.commit",
      description: "Commit staged changes.",
      loadingMode: "deferred",
      aliases: ["git.ci"],
    },
    { name: "ops.secret_rotate", description: "Rotate a secret file key.", loadingMode: "deferred" },
  ]);
  await registry.register("globex-src", [{ name: "globex.report", description: "Read a file report." }], {
    owner: "globex",
  });
  const settings = {
    ...toolSearch,
    defaultLoadingMode: "deferred" as const,
    activationScope: "run" as const,
    dispatch: false,
    preferredNamespaces: [],
    maxSearchResults: 10,
    runActivationTtlSeconds: 3600,
    goodMatchScore: 0.5,
    synonyms: {},
  };
  const sink = { emit: () => {} };
  return new ToolService({
    registry,
    index: new IndexHost(registry),
    access: createAccessControl({
      policy: { allowed: ["*"], denied: options.denied ?? [], requireTags: [] },
      visibility: [],
      toolSearch: settings,
    }),
    activations: new ActivationStore(db, { events: sink, runActivationTtlSeconds: 3600 }),
    lazyGroups: compileLazyGroups([]),
    toolSearch: settings,
    events: sink,
  });
}

const caller = { ...ANONYMOUS_CALLER, tenantId: "acme", runId: "r1" };
const visibility = (listed: { tools: readonly { name: string; visible: boolean }[] }) =>
  Object.fromEntries(listed.tools.map((tool) => [tool.name, tool.visible]));
const SEARCHING = { enabled: true, alwaysLoadedPatterns: [] };
/** ops.* is denied by policy; globex.report belongs to another tenant. */
const HIDING = { denied: ["ops.*"], aliases: { "old.read": "fs.read" } };

describe("ListTools visibility", () => {
  it("marks a deferred tool matched by always_loaded_patterns as visible", async () => {
    const tools = await service({ enabled: true, alwaysLoadedPatterns: ["fs.*"] });
    expect(visibility(await tools.list(caller, { showAll: true }))).toEqual({
      "fs.read": true,
      "git.commit": false,
      "ops.secret_rotate": false,
    });
  });

  it("marks every tool visible when tool search is off", async () => {
    const tools = await service({ enabled: false, alwaysLoadedPatterns: [] });
    expect(visibility(await tools.list(caller, { showAll: true }))).toEqual({
      "fs.read": true,
      "git.commit": true,
      "ops.secret_rotate": true,
    });
  });

  it("marks an activated tool visible", async () => {
    const tools = await service(SEARCHING);
    await tools.activate(caller, ["git.commit"], "run", "test");
    expect(visibility(await tools.list(caller, { showAll: true }))).toEqual({
      "fs.read": false,
      "git.commit": true,
      "ops.secret_rotate": false,
    });
  });
});

describe("ListTools pages", () => {
  it("list the tools in the prompt now without show_all, every tool the caller may use with it", async () => {
    const tools = await service(SEARCHING, HIDING);
    await tools.activate(caller, ["git.commit"], "run", "test");
    expect(visibility(await tools.list(caller, { showAll: false }))).toEqual({ "git.commit": true });
    expect(visibility(await tools.list(caller, { showAll: true }))).toEqual({
      "fs.read": false,
      "git.commit": true,
    });
  });

  it("count and page only what the caller may see", async () => {
    const tools = await service(SEARCHING, HIDING);
    const first = await tools.list(caller, { showAll: true, pageSize: 1 });
    expect(first.tools.map((tool) => tool.name)).toEqual(["fs.read"]);
    expect(first.totalSize).toBe(2);
    const second = await tools.list(caller, { showAll: true, pageSize: 1, pageToken: first.nextPageToken });
    expect(second.tools.map((tool) => tool.name)).toEqual(["git.commit"]);
    expect(second.nextPageToken).toBe("");
  });
});

describe("SearchTools", () => {
  it("finds the caller's deferred tools and never a hidden or another tenant's one", async () => {
    const tools = await service(SEARCHING, HIDING);
    const found = await tools.search(caller, { query: "read a file key report", includeAlwaysLoaded: false });
    expect(found.tools.map((hit) => hit.name)).toEqual(["fs.read"]);
    expect(found.totalDeferred).toBe(2);
  });

  it("leaves out tools the caller already sees unless they are asked for", async () => {
    const tools = await service(SEARCHING);
    await tools.activate(caller, ["git.commit"], "run", "test");
    const query = { query: "commit staged changes", type: "fts" as const };
    const names = async (includeAlwaysLoaded: boolean) =>
      (await tools.search(caller, { ...query, includeAlwaysLoaded })).tools.map((hit) => hit.name);
    expect(await names(false)).toEqual([]);
    expect(await names(true)).toEqual(["git.commit"]);
  });

  it("answers a configured old name with the tool it now names", async () => {
    const tools = await service(SEARCHING, HIDING);
    const found = await tools.search(caller, { query: "old.read", type: "exact", includeAlwaysLoaded: true });
    expect(found.tools.map((hit) => hit.name)).toEqual(["fs.read"]);
  });
});

describe("GetTools", () => {
  it("returns visible tools by name, tool alias or configured alias, and the rest as not found, as written", async () => {
    const tools = await service(SEARCHING, HIDING);
    const got = tools.get(caller, ["old.read", "git.ci", "ops.secret_rotate", "globex.report", "no.such"]);
    expect(got.tools.map((tool) => tool.name)).toEqual(["fs.read", "git.commit"]);
    expect(got.notFound).toEqual(["ops.secret_rotate", "globex.report", "no.such"]);
  });
});

describe("ActivateTools", () => {
  it("activates deferred tools for the run and reports tools already visible as such", async () => {
    const tools = await service({ enabled: true, alwaysLoadedPatterns: ["fs.*"] }, HIDING);
    expect(await tools.activate(caller, ["git.ci", "fs.read"], "run", "test")).toEqual({
      activated: ["git.commit"],
      alreadyVisible: ["fs.read"],
      scope: "run",
    });
  });

  it("refuses a hidden tool with the NOT_FOUND of a missing one", async () => {
    const tools = await service(SEARCHING, HIDING);
    const hidden = await notFoundMessage(() => tools.activate(caller, ["ops.secret_rotate"], "run", "test"));
    const missing = await notFoundMessage(() => tools.activate(caller, ["no.such"], "run", "test"));
    expect(hidden.replace("ops.secret_rotate", "X")).toBe(missing.replace("no.such", "X"));
  });
});

describe("ResolveTool", () => {
  it("activates a deferred tool on its first call only", async () => {
    const tools = await service(SEARCHING, HIDING);
    const first = await tools.resolve(caller, "old.read", undefined);
    const second = await tools.resolve(caller, "fs.read", undefined);
    expect([first.tool.name, first.activated, first.scope]).toEqual(["fs.read", true, "run"]);
    expect([second.tool.name, second.activated]).toEqual(["fs.read", false]);
  });

  it("answers a hidden or another tenant's tool with the NOT_FOUND of a missing one", async () => {
    const tools = await service(SEARCHING, HIDING);
    const missing = (await notFoundMessage(() => tools.resolve(caller, "no.such", undefined))).replace(
      "no.such",
      "X",
    );
    for (const name of ["ops.secret_rotate", "globex.report"])
      expect((await notFoundMessage(() => tools.resolve(caller, name, undefined))).replace(name, "X")).toBe(
        missing,
      );
  });
});

describe("RenderToolPrompt", () => {
  it("shows always-visible and activated tools, never hidden ones", async () => {
    const tools = await service({ enabled: true, alwaysLoadedPatterns: ["fs.*", "ops.*"] }, HIDING);
    await tools.activate(caller, ["git.commit"], "run", "test");
    const rendered = await tools.renderPrompt(caller, { includeDirectory: true });
    expect(rendered.visibleTools).toEqual(["fs.read", "git.commit"]);
    expect(rendered.text).not.toContain("ops.secret_rotate");
    expect(rendered.text).not.toContain("globex.report");
  });

  it("hints deferred tools the caller may find, never hidden ones", async () => {
    const tools = await service(SEARCHING, HIDING);
    const rendered = await tools.renderPrompt(caller, { hintMessage: "rotate the secret key of a file" });
    expect(rendered.hintedTools).toEqual(["fs.read"]);
  });
});
