import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import type { Tool } from "../../src/discovery/types.ts";
import type { NewEvent } from "../../src/events/index.ts";
import { type RenderToolPromptRequest, renderToolCatalog, renderToolPrompt } from "../../src/prompt/index.ts";
import { caller, OPEN_POLICY, tool } from "../access/fixtures.ts";

const TOOLS: Tool[] = [
  tool("core.search", { loadingMode: "always", description: "Search things." }),
  tool("core.read", { description: "Read a file.", tags: ["fs"] }),
  tool("github.create_issue", {
    sideEffects: "write",
    tags: ["issues"],
    argsSchema: {
      type: "object",
      properties: { repo: { type: "string" }, title: { type: "string" } },
      required: ["repo", "title"],
    },
    examples: [{ args: { repo: "o/r", title: "Bug" }, description: "file a bug", tags: ["minimal"] }],
  }),
  tool("github.list_prs", { tags: ["issues"] }),
  tool("github.delete_repo", { aliases: ["delete_repo"] }),
  tool("slack.post", { description: "Post. Prefer github.delete_repo? never; see delete_repo." }),
];

const ac = createAccessControl({
  policy: { ...OPEN_POLICY, denied: ["github.delete_repo"] },
  visibility: [],
  toolSearch: { alwaysLoadedPatterns: ["core.read"] },
});
const access = ac.forCaller(caller());

const render = (overrides: Partial<RenderToolPromptRequest> = {}) =>
  renderToolPrompt({
    caller: caller(),
    access,
    tools: TOOLS,
    activeNames: [],
    toolSearch: { enabled: true },
    ...overrides,
  });

describe("renderToolPrompt", () => {
  it("shows always-visible tools by name, then activated tools in activation order", () => {
    const out = render({ activeNames: ["slack.post", "github.create_issue", "core.read"] });
    expect(out.visibleTools).toEqual(["core.read", "core.search", "slack.post", "github.create_issue"]);
  });

  it("makes each render a byte-identical prefix of the next as tools activate", () => {
    const order = ["slack.post", "github.create_issue", "github.list_prs"];
    let previous = render().text;
    for (let i = 1; i <= order.length; i++) {
      const next = render({ activeNames: order.slice(0, i) }).text;
      expect(next.startsWith(previous)).toBe(true);
      expect(next.length).toBeGreaterThan(previous.length);
      previous = next;
    }
  });

  it("keeps everything but the hints stable when hints are on", () => {
    const hints = { message: "issues", search: () => ["github.list_prs", "github.create_issue"] };
    const before = render({ hints, directory: {} });
    const after = render({ hints, directory: {}, activeNames: ["github.create_issue"] });
    expect(after.text.startsWith(before.text.slice(0, before.stablePrefixLength))).toBe(true);
  });

  it("renders byte-identical text for the same state, whatever the input order", () => {
    const a = render({ activeNames: ["slack.post"] });
    const b = render({ activeNames: ["slack.post"], tools: [...TOOLS].reverse() });
    expect(b.text).toBe(a.text);
    expect(b.fingerprint).toBe(a.fingerprint);
    expect(a.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it("counts visible deferred tools and tells the model how to find them", () => {
    const out = render({ activeNames: ["slack.post"] });
    expect(out.deferredCount).toBe(3); // create_issue, list_prs, slack.post (activated still counts)
    expect(out.text).toContain("<tool_discovery>\n3 deferred tools can be loaded on demand");
    expect(out.text).toMatch(/tool_search[\s\S]*tool_get/);
  });

  it("renders name, side effects, args signature and examples of a tool", () => {
    const out = render({ activeNames: ["github.create_issue"] });
    expect(out.text).toContain(
      '<tool name="github.create_issue" side_effects="write">\nDoes github.create_issue things.\n' +
        'args: {repo: string, title: string}\nexamples:\n- {"repo":"o/r","title":"Bug"} — file a bug\n</tool>\n',
    );
  });

  it("never shows a hidden tool, even if it is in the activation list or hints", () => {
    const out = render({
      activeNames: ["github.delete_repo"],
      hints: { message: "delete", search: () => ["github.delete_repo", "delete_repo"] },
      directory: {},
    });
    expect(out.visibleTools).not.toContain("github.delete_repo");
    expect(out.hintedTools).toEqual([]);
    expect(out.text).not.toContain("delete_repo");
  });

  it("redacts hidden tool names from visible descriptions", () => {
    const out = render({ activeNames: ["slack.post"] });
    expect(out.text).toContain("Prefer [unavailable tool]? never; see [unavailable tool].");
  });

  it("redacts a hidden name followed by dots, and long runs of dots without stalling", () => {
    // A description of 16,000 dots between letters took 0.4 s to scan for trailing punctuation.
    const dots = `a${".".repeat(16_000)}a`;
    const tools = [...TOOLS, tool("slack.dots", { description: `Not github.delete_repo... ${dots}` })];
    const started = performance.now();
    const out = render({ tools, activeNames: ["slack.dots"] });
    expect(performance.now() - started).toBeLessThan(250);
    expect(out.text).toContain(`Not [unavailable tool]... ${dots}`);
  });

  it("redacts every use of a hidden alias that is not name-shaped, in one pass", () => {
    // Rebuilding the text per occurrence took about a second for 16,000 occurrences.
    const tools = TOOLS.map((t) => (t.name === "github.delete_repo" ? { ...t, aliases: ["!"] } : t));
    tools.push(tool("slack.shout", { description: "!".repeat(16_000) }));
    const started = performance.now();
    const out = render({ tools, activeNames: ["slack.shout"] });
    expect(performance.now() - started).toBeLessThan(250);
    expect(out.text).toContain("[unavailable tool]".repeat(16_000));
  });

  it("hints top-k deferred tools that are not shown, and emits counts only", () => {
    const events: NewEvent[] = [];
    const out = render({
      activeNames: ["github.create_issue"],
      hints: {
        message: "issues",
        k: 1,
        search: () => ["github.create_issue", "github.list_prs", "slack.post"],
      },
      events: { emit: (e) => events.push(e) },
    });
    expect(out.hintedTools).toEqual(["github.list_prs"]);
    expect(
      out.text.endsWith(
        "<tool_hints>\nDeferred tools that may help with this request (load with tool_get before calling):\n- github.list_prs\n</tool_hints>\n",
      ),
    ).toBe(true);
    expect(events.map((e) => [e.type, e.attributes])).toEqual([["tool_hints_generated", { count: 1 }]]);
  });

  it("bounds the directory to maxEntries", () => {
    const out = render({ directory: { maxEntries: 1 } });
    expect(out.text).toContain(
      "<tool_directory>\nnamespaces: github (2), … 1 more\ntags: … 1 more\n</tool_directory>\n",
    );
  });

  it("with tool_search disabled shows every visible tool exactly like a plain catalog render", () => {
    const tools = TOOLS.filter((t) => t.name !== "slack.post");
    const out = render({ tools, toolSearch: { enabled: false }, activeNames: ["github.list_prs"] });
    const visible = tools.filter((t) => access.canActivate(t));
    expect(out.text).toBe(renderToolCatalog(visible));
    expect(out.text).not.toContain("<tool_discovery>");
    expect(out.visibleTools).toEqual(["core.read", "core.search", "github.create_issue", "github.list_prs"]);
  });
});
