import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import { ActivationStore, compileLazyGroups } from "../../src/activation/index.ts";
import { ANONYMOUS_CALLER } from "../../src/caller/caller.ts";
import { ToolCatalog } from "../../src/discovery/index.ts";
import { allMigrations } from "../../src/server/migrations.ts";
import { openDatabase } from "../../src/store/database.ts";
import { ToolService } from "../../src/tools/service.ts";

async function service(toolSearch: { enabled: boolean; alwaysLoadedPatterns: string[] }) {
  const db = openDatabase(":memory:", allMigrations);
  const catalog = new ToolCatalog(db);
  await catalog.register("src", [
    { name: "fs.read", description: "Read a file.", loadingMode: "deferred" },
    { name: "git.commit", description: "Commit staged changes.", loadingMode: "deferred" },
  ]);
  const settings = {
    ...toolSearch,
    defaultLoadingMode: "deferred" as const,
    activationScope: "run" as const,
    preferredNamespaces: [],
    maxSearchResults: 10,
    runActivationTtlSeconds: 3600,
  };
  const sink = { emit: () => {} };
  return new ToolService({
    catalog,
    access: createAccessControl({
      policy: { allowed: ["*"], denied: [], requireTags: [] },
      visibility: [],
      toolSearch: settings,
    }),
    activations: new ActivationStore(db, { events: sink, runActivationTtlSeconds: 3600 }),
    lazyGroups: compileLazyGroups([]),
    toolSearch: settings,
    aliases: {},
    events: sink,
  });
}

const caller = { ...ANONYMOUS_CALLER, tenantId: "acme", runId: "r1" };
const visibility = (listed: { tools: readonly { name: string; visible: boolean }[] }) =>
  Object.fromEntries(listed.tools.map((tool) => [tool.name, tool.visible]));

describe("ListTools visibility", () => {
  it("marks a deferred tool matched by always_loaded_patterns as visible", async () => {
    const tools = await service({ enabled: true, alwaysLoadedPatterns: ["fs.*"] });
    expect(visibility(tools.list(caller, { showAll: true }))).toEqual({
      "fs.read": true,
      "git.commit": false,
    });
  });

  it("marks every tool visible when tool search is off", async () => {
    const tools = await service({ enabled: false, alwaysLoadedPatterns: [] });
    expect(visibility(tools.list(caller, { showAll: true }))).toEqual({
      "fs.read": true,
      "git.commit": true,
    });
  });

  it("marks an activated tool visible", async () => {
    const tools = await service({ enabled: true, alwaysLoadedPatterns: [] });
    tools.activate(caller, ["git.commit"], "run", "test");
    expect(visibility(tools.list(caller, { showAll: true }))).toEqual({
      "fs.read": false,
      "git.commit": true,
    });
  });
});
