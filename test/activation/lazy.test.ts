import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import { activateLazyGroups, compileLazyGroups, keywordMatches } from "../../src/activation/index.ts";
import type { LazyToolGroupConfig } from "../../src/config/types.ts";
import { caller, NO_ALWAYS, OPEN_POLICY, tool } from "../access/fixtures.ts";
import { openStore } from "./helpers.ts";

const group = (
  name: string,
  tools: string[],
  keywords: string[],
  regexes: string[] = [],
): LazyToolGroupConfig => ({
  name,
  tools,
  triggers: { keywords, regexes },
});

const TOOLS = [tool("k8s.list_pods"), tool("k8s.delete_pod"), tool("github.create_issue")];
const access = createAccessControl({
  policy: { ...OPEN_POLICY, denied: ["k8s.delete_pod"] },
  visibility: [],
  toolSearch: NO_ALWAYS,
}).forCaller(caller());

describe("keyword triggers", () => {
  const m = (k: string, msg: string) => keywordMatches(k, msg.toLowerCase().replace(/\s+/g, " "));

  it("match whole words case-insensitively", async () => {
    expect(m("deploy", "Please DEPLOY it.")).toBe(true);
    expect(m("deploy", "redeployment")).toBe(false);
  });

  it("match phrases across any whitespace", async () => {
    expect(m("pull request", "open a pull\n  request now")).toBe(true);
    expect(m("pull request", "pull requests")).toBe(false);
  });

  it("need no word boundary at a non-word edge of the keyword", async () => {
    expect(m("c++", "I write C++ daily")).toBe(true);
  });
});

describe("compileLazyGroups", () => {
  it("fires on RE2 regexes", async () => {
    const groups = compileLazyGroups([group("k8s", ["k8s.*"], [], ["\\bpods?\\b"])]);
    expect(groups.triggered("list the pods")).toEqual(["k8s"]);
    expect(groups.triggered("nothing here")).toEqual([]);
  });

  it("rejects an invalid regex with invalid_argument", async () => {
    expect(() => compileLazyGroups([group("bad", ["*"], [], ["(unclosed"])])).toThrowError(
      expect.objectContaining({ code: "invalid_argument" }),
    );
  });

  it("never returns a member the caller cannot see", async () => {
    const groups = compileLazyGroups([group("k8s", ["k8s.*"], ["kubernetes"])]);
    expect(groups.match("kubernetes help", TOOLS, access)).toEqual([
      { group: "k8s", tools: ["k8s.list_pods"] },
    ]);
  });
});

describe("activateLazyGroups", () => {
  it("activates visible members for the run once, however many groups fire", async () => {
    const { store, events } = openStore();
    const groups = compileLazyGroups([
      group("a", ["k8s.*"], ["pods"]),
      group("b", ["k8s.list_pods"], ["list"]),
    ]);
    const deps = { store, access, groups };
    const first = await activateLazyGroups(deps, caller(), "list pods", TOOLS);
    expect(first.activated).toEqual(["k8s.list_pods"]);
    expect(first.groups).toEqual(["a", "b"]);
    const again = await activateLazyGroups(deps, caller(), "list pods", TOOLS);
    expect(again).toEqual({ activated: [], alreadyActive: ["k8s.list_pods"], groups: ["a", "b"] });
    expect(events.filter((e) => e.type === "tool_activated")).toEqual([
      expect.objectContaining({
        attributes: { tool: "k8s.list_pods", scope: "run", source: "lazy_group", reason: "lazy_group:a" },
      }),
    ]);
    expect(store.activeFor(caller())).toEqual(["k8s.list_pods"]);
  });

  it("activates groups larger than the per-call cap", async () => {
    const { store } = openStore();
    const many = Array.from({ length: 150 }, (_, i) => tool(`bulk.t${String(i).padStart(3, "0")}`));
    const groups = compileLazyGroups([group("bulk", ["bulk.*"], ["bulk"])]);
    expect(
      (await activateLazyGroups({ store, access, groups }, caller(), "bulk", many)).activated,
    ).toHaveLength(150);
  });
});
