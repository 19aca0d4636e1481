import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import { activateVisible } from "../../src/activation/index.ts";
import type { Tool } from "../../src/discovery/types.ts";
import { caller, NO_ALWAYS, OPEN_POLICY, tool } from "../access/fixtures.ts";
import { openStore } from "./helpers.ts";

const TOOLS = [tool("github.create_issue"), tool("github.delete_repo", { aliases: ["delete_repo"] })];
/** A resolver that ignores access on purpose: activateVisible must check anyway. */
const resolve = (name: string): Tool | undefined =>
  TOOLS.find((t) => t.name === name || t.aliases.includes(name));
const access = createAccessControl({
  policy: { ...OPEN_POLICY, denied: ["github.delete_repo"] },
  visibility: [],
  toolSearch: NO_ALWAYS,
}).forCaller(caller());
const opts = { scope: "run" as const, source: "explicit" as const, reason: "add_tool" };

describe("activateVisible", () => {
  it("activates admitted tools under their canonical name", async () => {
    const { store } = openStore();
    const result = await activateVisible({ store, access, resolve }, caller(), ["github.create_issue"], opts);
    expect(result).toEqual({ activated: ["github.create_issue"], alreadyActive: [], notFound: [] });
  });

  it("refuses a denied tool by exact name or alias like an unknown one, and stores nothing", async () => {
    const { store } = openStore();
    const result = await activateVisible(
      { store, access, resolve },
      caller(),
      ["github.delete_repo", "delete_repo", "nope"],
      opts,
    );
    expect(result.notFound).toEqual(["github.delete_repo", "delete_repo", "nope"]);
    expect(store.activeFor(caller())).toEqual([]);
  });

  it("emits one nameless tool_activation_denied with the refused count", async () => {
    const { store, events } = openStore();
    await activateVisible({ store, access, resolve }, caller(), ["delete_repo", "github.create_issue"], opts);
    const denied = events.filter((e) => e.type === "tool_activation_denied");
    expect(denied).toEqual([
      {
        type: "tool_activation_denied",
        tenantId: "acme",
        sessionId: "s1",
        runId: "r1",
        attributes: { reason: "unavailable", count: 1 },
      },
    ]);
    expect(JSON.stringify(events)).not.toContain("delete_repo");
  });
});
