import { describe, expect, it } from "vitest";
import type { IndexHost } from "../../src/discovery/index-host.ts";
import type { SearchRequest } from "../../src/discovery/types.ts";
import { WayfindError } from "../../src/errors.ts";
import { ModelWords } from "../../src/search/model-words.ts";
import { names, openCatalog, seeded, viewOf } from "./helpers.ts";

describe("fts search", () => {
  it("ranks the tool whose name and description match all words first", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "list kubernetes pods" });
    expect(result.tools[0]?.name).toBe("kubernetes.list_pods");
    expect(result.effectiveSearchType).toBe("fts");
  });

  it("does not rank kubernetes.ping first for 'list kubernetes pods' (negative bm25 pitfall)", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "list kubernetes pods", limit: 5 });
    expect(names(result).indexOf("kubernetes.ping")).not.toBe(0);
  });

  it("finds a tool by its bare name without namespace", async () => {
    const { catalog } = await seeded();
    expect(names(catalog.index.search({ query: "send_message" }))[0]).toBe("slack.send_message");
  });

  it("finds a tool by its name in another case style", async () => {
    const { catalog } = await seeded();
    expect(names(catalog.index.search({ query: "sendMessage" }))[0]).toBe("slack.send_message");
    expect(names(catalog.index.search({ query: "create-issue" }))[0]).toBe("github.createIssue");
  });

  it("matches words through stemming", async () => {
    const { catalog } = await seeded();
    expect(names(catalog.index.search({ query: "capturing screenshots" }))[0]).toBe(
      "browser.take_screenshot",
    );
  });

  it("searches parameter names and descriptions", async () => {
    const { catalog } = await seeded();
    expect(names(catalog.index.search({ query: "city" }))[0]).toBe("weather.get_weather");
  });

  it("respects the limit", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "kubernetes", limit: 1 }).tools).toHaveLength(1);
  });

  it("excludes always-loaded tools unless asked for them", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "always_tool", description: "alpha tool", loadingMode: "always" },
      { name: "deferred_tool", description: "alpha tool" },
    ]);
    expect(names(catalog.index.search({ query: "alpha" }))).toEqual(["deferred_tool"]);
    expect(names(catalog.index.search({ query: "alpha", includeAlwaysLoaded: true })).sort()).toEqual([
      "always_tool",
      "deferred_tool",
    ]);
  });

  it("returns an empty list (not an error) when nothing matches", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "zzzzqqqq xxyyzz" }).tools).toEqual([]);
  });
});

describe("fallbacks", () => {
  it("uses AND when enough tools contain every word", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "kubernetes", limit: 1 }).strategy).toBe("and");
  });

  it("widens to OR when no tool contains every word, and says so", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "weather pods" });
    expect(result.strategy).toBe("or");
    expect(names(result)).toEqual(expect.arrayContaining(["weather.get_weather", "kubernetes.list_pods"]));
  });

  it("widens to fuzzy for a typo", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "wether" });
    expect(result.strategy).toBe("fuzzy");
    expect(result.tools[0]?.name).toBe("weather.get_weather");
    expect(result.tools[0]?.matchType).toBe("fts_fuzzy");
  });

  it("reports a search widened to fuzzy as an effective fuzzy search", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "wether" }).effectiveSearchType).toBe("fuzzy");
    expect(catalog.index.search({ query: "weather" }).effectiveSearchType).toBe("fts");
  });

  it("finds screenshoot → take_screenshot", async () => {
    const { catalog } = await seeded();
    expect(names(catalog.index.search({ query: "screenshoot" }))[0]).toBe("browser.take_screenshot");
  });

  it("expands an abbreviation: send msg → send_message", async () => {
    const { catalog } = await seeded();
    expect(names(catalog.index.search({ query: "send msg" }))[0]).toBe("slack.send_message");
  });
});

describe("regex search", () => {
  it("answers right after a change, before its literal index is built, as it does after", async () => {
    const { catalog } = await seeded();
    await catalog.registry.register("more", [
      { name: "weather_alerts", description: "Severe weather alerts" },
    ]);
    const queries = ["weather", "^get_", "alert|forecast", "w.*er"];
    const before = queries.map((query) => names(catalog.index.search({ query, type: "regex" })));
    await catalog.index.settled();
    expect(queries.map((query) => names(catalog.index.search({ query, type: "regex" })))).toEqual(before);
    expect(before[0]).toContain("weather_alerts");
  });

  it("stops early but still returns the best tie-break order when many names match", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register(
      "s",
      Array.from({ length: 300 }, (_, i) => ({
        name: `match_${String(i).padStart(3, "0")}`,
        sideEffects: "write" as const,
      })),
    );
    await catalog.registry.register("t", [{ name: "match_zzz", sideEffects: "pure" }]);
    expect(names(catalog.index.search({ query: "match_.*", type: "regex", limit: 3 }))).toEqual([
      "match_zzz",
      "match_000",
      "match_001",
    ]);
  });

  it("scores full-name 0.95, prefix 0.90, substring 0.85, text-only 0.75", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "ping", description: "x" },
      { name: "ping_all", description: "x" },
      { name: "do_ping", description: "x" },
      { name: "noop", description: "sends a ping" },
    ]);
    const result = catalog.index.search({ query: "ping", type: "regex" });
    expect(result.tools.map((t) => [t.name, t.score])).toEqual([
      ["ping", 0.95],
      ["ping_all", 0.9],
      ["do_ping", 0.85],
      ["noop", 0.75],
    ]);
  });

  it("matches the bare name for full-name and prefix scores", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "list_.*", type: "regex" });
    expect(result.tools[0]).toMatchObject({
      name: "kubernetes.list_pods",
      score: 0.95,
      matchType: "regex_full_name",
    });
  });

  it("is case-insensitive", async () => {
    const { catalog } = await seeded();
    expect(names(catalog.index.search({ query: "CREATEISSUE", type: "regex" }))).toEqual([
      "github.createIssue",
    ]);
  });

  it("rejects an invalid pattern with the parser's message", async () => {
    const { catalog } = await seeded();
    expect(() => catalog.index.search({ query: "([a-z", type: "regex" })).toThrowError(
      /invalid regex: .*missing/i,
    );
  });

  it("runs a catastrophic pattern over long names and texts in linear time, refusing it past the bound", async () => {
    const { catalog } = openCatalog();
    const long = "a".repeat(120);
    await catalog.registry.register(
      "s",
      Array.from({ length: 200 }, (_, i) => ({
        name: `${long.slice(0, 100)}${i}`,
        description: `${"a".repeat(4000)}!`,
      })),
    );
    const started = performance.now();
    // Over names alone the pattern runs; over the long descriptions too it is refused at the bound.
    expect(catalog.index.search({ query: "(a+)+\\d$", type: "regex", limit: 10 }).tools).toHaveLength(10);
    expect(() => catalog.index.search({ query: "(a|aa)+b", type: "regex" })).toThrowError(/too broadly/);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("rejects patterns over the length cap", async () => {
    const { catalog } = await seeded();
    expect(() => catalog.index.search({ query: "a".repeat(257), type: "regex" })).toThrowError(
      /limit is 256/,
    );
  });
});

describe("exact search", () => {
  it("returns the named tool with score 1.0", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "slack.send_message", type: "exact" }).tools).toEqual([
      expect.objectContaining({ name: "slack.send_message", score: 1, matchType: "exact" }),
    ]);
  });

  it("accepts the bare name and other case styles", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "SendMessage", type: "exact" });
    expect(result.tools).toEqual([
      expect.objectContaining({ name: "slack.send_message", score: 1, matchType: "exact_normalized" }),
    ]);
  });

  it("finds nothing for a partial name", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "send", type: "exact" }).tools).toEqual([]);
  });
});

describe("bad input", () => {
  const cases: [string, object, RegExp][] = [
    ["empty query", { query: "  " }, /query is empty/],
    ["oversize query", { query: "x".repeat(513) }, /query must have 1–512 characters, got 513/],
    ["limit 0", { query: "x", limit: 0 }, /limit must be 1–20, got 0/],
    ["limit 21", { query: "x", limit: 21 }, /limit must be 1–20, got 21/],
    ["fractional limit", { query: "x", limit: 2.5 }, /limit must be 1–20, got 2.5/],
    [
      "unknown type",
      { query: "x", type: "semantic" },
      /search type "semantic" is unknown; use one of fts, regex, exact/,
    ],
  ];
  for (const [what, request, message] of cases)
    it(`rejects ${what} as invalid_argument`, async () => {
      const { catalog } = await seeded();
      let error: unknown;
      try {
        catalog.index.search(request as Parameters<typeof catalog.index.search>[0]);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(WayfindError);
      expect((error as WayfindError).code).toBe("invalid_argument");
      expect((error as WayfindError).message).toMatch(message);
    });
});

describe("events", () => {
  it("emits tool_search_cache_ready again when the index is rebuilt after a change", async () => {
    const { catalog, events } = openCatalog();
    await catalog.registry.register("s", [{ name: "a" }, { name: "b" }]);
    catalog.index.search({ query: "a" });
    expect(
      events.filter((e) => e.type === "tool_search_cache_ready").map((e) => e.attributes.tool_count),
    ).toEqual([0, 2]);
  });

  it("emits tool_search_cache_ready on start and tool_search_query per search", async () => {
    const { catalog, events } = await seeded();
    catalog.index.search({ query: "wether", scope: { tenantId: "acme", runId: "r1" } });
    expect(events[0]).toEqual({ type: "tool_search_cache_ready", attributes: { tool_count: 0 } });
    expect(events.at(-2)).toMatchObject({ type: "tool_search_cache_ready", attributes: { tool_count: 6 } });
    expect(events.at(-1)).toEqual({
      type: "tool_search_query",
      tenantId: "acme",
      runId: "r1",
      attributes: {
        query: "wether",
        requested_type: "fts",
        effective_type: "fts",
        strategy: "fuzzy",
        result_count: 1,
        // No semantic evidence was given: words only.
        semantic_status: "off",
        semantic_texts_pending: 0,
        semantic_tier: "none",
      },
    });
  });
});

/** The meaning of a request as ToolService works it out: prepared once, then read for its meaning. */
function meaningOf(catalog: { index: IndexHost }, request: SearchRequest) {
  return catalog.index.meaningOf(catalog.index.prepare(request));
}

describe("how much a request's words say (what the model's time goes to first under load)", () => {
  it("is the best lexical score of the request over the tools it may find", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "get_status", description: "Get the status of a deployment" },
      { name: "send_email", description: "Send an email" },
    ]);
    const named = meaningOf(catalog, { query: "get status" }).wordsScore ?? 0;
    expect(named).toBeCloseTo(catalog.index.search({ query: "get status" }).tools[0]?.score ?? -1, 9);
    expect(meaningOf(catalog, { query: "will it rain tomorrow" }).wordsScore).toBe(0);
  });
});

describe("the texts a request is embedded as", () => {
  it("is the request with its slips repaired against the catalog's words", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "get_status", description: "Get the status of a deployment" },
    ]);
    expect(meaningOf(catalog, { query: "colud you check the deployment stauts" }).texts).toEqual([
      "could you check the deployment status",
    ]);
  });

  it("is each intent of a request with several", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "get_weather", description: "Weather forecast for a city" },
    ]);
    expect(
      meaningOf(catalog, {
        query: "Check the weather forecast for Oslo; then book a table for two tonight",
      }).texts,
    ).toEqual(["Check the weather forecast for Oslo", "book a table for two tonight"]);
  });

  it("repairs only with words of tools the caller may find", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [{ name: "weather", description: "Weather forecast" }]);
    await catalog.registry.register("t", [{ name: "deploy_status", description: "Status of a deployment" }], {
      owner: "globex",
    });
    // "stauts" is a slip for "status", a word only another tenant's tool has.
    const acme = viewOf(await catalog.index.ready(), { tenant: "acme" });
    expect(meaningOf(catalog, { query: "deployment stauts", view: acme }).texts).toEqual([
      "deployment stauts",
    ]);
  });

  it("repairs a slip in a word no tool has against the model's words, so it reaches the model as a word", async () => {
    const modelWords = new ModelWords([
      "[PAD]",
      "should",
      "take",
      "umbrella",
      "tomorrow",
      "##bre",
      "weather",
    ]);
    const { catalog } = openCatalog({ modelWords });
    await catalog.registry.register("s", [
      { name: "get_weather", description: "Current weather for a city" },
    ]);
    expect(meaningOf(catalog, { query: "should I take an umbrel tomorow" }).texts).toEqual([
      "should I take an umbrella tomorrow",
    ]);
    // The catalog's words come first: "wether" is read as the catalog's "weather".
    expect(meaningOf(catalog, { query: "wether in Oslo" }).texts).toEqual(["weather in Oslo"]);
  });

  it("never changes a word a tool the caller may find has, whatever the model's words", async () => {
    const modelWords = new ModelWords(["docked", "reds"]);
    const { catalog } = openCatalog({ modelWords });
    await catalog.registry.register("s", [{ name: "docker_ps", description: "List docker containers" }]);
    expect(meaningOf(catalog, { query: "list docker containers" }).texts).toEqual(["list docker containers"]);
  });

  it("refuses what search refuses, before anything is embedded", async () => {
    const { catalog } = openCatalog();
    expect(() => meaningOf(catalog, { query: "   " }).texts).toThrow(/query is empty/);
  });
});
