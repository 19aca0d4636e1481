import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type JsonObject, PAYLOAD_PROVIDERS, renderToolPayload } from "../../src/payload/index.ts";
import { catalogTools, tool } from "./catalog.ts";
import { formatErrors, validators } from "./provider-formats.ts";

type Tools = { readonly [k: string]: unknown }[];
const parse = (json: string) => JSON.parse(json) as Tools;
const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");

describe("renderToolPayload", () => {
  it.each(PAYLOAD_PROVIDERS)("renders all 309 catalog tools in %s's documented tool format", (provider) => {
    const { payloadJson } = renderToolPayload({ provider, tools: catalogTools() });
    const ok = validators[provider](JSON.parse(payloadJson));
    expect(ok, formatErrors(provider)).toBe(true);
  });

  it("has format checks that catch a raw JSON Schema in Gemini and a wrong shape elsewhere", () => {
    const raw = { type: "object", additionalProperties: false, properties: { q: { type: "string" } } };
    expect(
      validators.gemini({ functionDeclarations: [{ name: "t", description: "", parameters: raw }] }),
    ).toBe(false);
    expect(
      validators.anthropic(
        JSON.parse(renderToolPayload({ provider: "openai", tools: [tool("t")] }).payloadJson),
      ),
    ).toBe(false);
    expect(
      validators.openai([{ type: "function", function: { name: "a.b", parameters: { type: "object" } } }]),
    ).toBe(false);
  });

  it("keeps the caller's order instead of sorting", () => {
    const { payloadJson } = renderToolPayload({
      provider: "anthropic",
      tools: [tool("zeta"), tool("alpha"), tool("mid", true)],
    });
    expect(parse(payloadJson).map((t) => t.name)).toEqual(["zeta", "alpha", "mid"]);
  });

  it("puts cache_control on the last stable tool only, never on a deferred one", () => {
    const tools = [tool("a"), tool("b"), tool("x", true), tool("y", true)];
    const { payloadJson, breakpointIndex } = renderToolPayload({ provider: "anthropic", tools });
    const rendered = parse(payloadJson);
    expect(breakpointIndex).toBe(1);
    expect(rendered.map((t) => t.cache_control ?? null)).toEqual([null, { type: "ephemeral" }, null, null]);
  });

  it("has no breakpoint when every tool is deferred, and hashes the opening bytes", () => {
    const result = renderToolPayload({ provider: "anthropic", tools: [tool("x", true)] });
    expect(result.breakpointIndex).toBe(-1);
    expect(result.payloadJson).not.toContain("cache_control");
    expect(result.prefixHash).toBe(sha256("["));
  });

  it("hashes the payload bytes up to and including the breakpoint tool", () => {
    for (const provider of PAYLOAD_PROVIDERS) {
      const r = renderToolPayload({ provider, tools: [tool("a"), tool("b"), tool("x", true)] });
      const prefix = Buffer.from(r.payloadJson, "utf8").subarray(0, r.prefixBytes).toString("utf8");
      expect(sha256(prefix)).toBe(r.prefixHash);
      expect(prefix.endsWith("}")).toBe(true);
      expect(prefix).toContain('"b"');
      expect(prefix).not.toContain('"x"');
    }
  });

  it("keeps the prefix byte-identical when activated tools are appended", () => {
    const stable = [tool("core.one"), tool("core.two")];
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.stringMatching(/^[a-z]{1,8}\.[a-z_]{1,12}$/), { maxLength: 6 }),
        (names) => {
          for (const provider of PAYLOAD_PROVIDERS) {
            const before = renderToolPayload({ provider, tools: stable });
            const after = renderToolPayload({
              provider,
              tools: [...stable, ...names.filter((n) => !n.startsWith("core.")).map((n) => tool(n, true))],
            });
            expect(after.prefixHash).toBe(before.prefixHash);
            expect(after.payloadJson.startsWith(before.payloadJson.slice(0, before.prefixBytes))).toBe(true);
          }
        },
      ),
    );
  });

  it("renders the same bytes whatever key order the schemas have", () => {
    const a: JsonObject = {
      type: "object",
      properties: { q: { type: "string", description: "d" } },
      required: ["q"],
    };
    const b: JsonObject = {
      required: ["q"],
      properties: { q: { description: "d", type: "string" } },
      type: "object",
    };
    for (const provider of PAYLOAD_PROVIDERS) {
      expect(renderToolPayload({ provider, tools: [tool("t", false, a)] }).payloadJson).toBe(
        renderToolPayload({ provider, tools: [tool("t", false, b)] }).payloadJson,
      );
    }
  });

  it("with nativeSearch, marks deferred tools defer_loading and adds Anthropic's tool search tool", () => {
    const r = renderToolPayload({
      provider: "anthropic",
      tools: [tool("a"), tool("x", true)],
      nativeSearch: true,
    });
    const rendered = parse(r.payloadJson);
    expect(rendered[0]).toEqual({ type: "tool_search_tool_bm25_20251119", name: "tool_search_tool_bm25" });
    expect(rendered[1]).toMatchObject({ name: "a", cache_control: { type: "ephemeral" } });
    expect(rendered[2]).toMatchObject({ name: "x", defer_loading: true });
    expect(rendered[2]).not.toHaveProperty("cache_control");
    expect(r.breakpointIndex).toBe(1);
    expect(validators.anthropic(rendered)).toBe(true);
  });

  it("renames a caller tool that would shadow the native tool search tool", () => {
    const r = renderToolPayload({
      provider: "anthropic",
      tools: [tool("tool_search_tool_bm25"), tool("x", true)],
      nativeSearch: true,
    });
    expect(Object.keys(r.toolNames)).toEqual([
      expect.stringMatching(/^tool_search_tool_bm25_[0-9a-f]{8}$/),
      "x",
    ]);
  });

  it("rejects nativeSearch for providers without it", () => {
    expect(() => renderToolPayload({ provider: "openai", tools: [tool("a")], nativeSearch: true })).toThrow(
      expect.objectContaining({
        code: "invalid_argument",
        message: expect.stringMatching(/only supported for provider anthropic/),
      }),
    );
  });

  it("maps dotted names to provider-safe names and returns the way back", () => {
    const r = renderToolPayload({ provider: "openai", tools: [tool("github.create_issue")] });
    expect(parse(r.payloadJson)[0]).toMatchObject({ function: { name: "github__create_issue" } });
    expect(r.toolNames).toEqual({ github__create_issue: "github.create_issue" });
  });

  it("shortens over-long names with a hash suffix and resolves collisions without renaming earlier tools", () => {
    const long = `ns.${"x".repeat(80)}`;
    const r = renderToolPayload({ provider: "anthropic", tools: [tool("a__b"), tool("a.b"), tool(long)] });
    const names = parse(r.payloadJson).map((t) => String(t.name));
    expect(names[0]).toBe("a__b");
    expect(names[1]).toMatch(/^a__b_[0-9a-f]{8}$/);
    expect(names[2]).toHaveLength(64);
    expect(Object.values(r.toolNames).sort()).toEqual(["a.b", "a__b", long].sort());
  });

  it("rejects duplicate names and non-object schemas as invalid_argument with every problem", () => {
    try {
      renderToolPayload({
        provider: "anthropic",
        tools: [tool("a"), tool("a"), tool("s", false, { type: "string" })],
      });
      expect.unreachable();
    } catch (e) {
      expect(e).toMatchObject({
        code: "invalid_argument",
        details: [
          'tools[1].name: "a" appears more than once',
          'tools[2].inputSchema: type must be "object" (tool arguments are an object)',
        ],
      });
    }
  });
});
