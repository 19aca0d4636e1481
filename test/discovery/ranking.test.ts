import { describe, expect, it } from "vitest";
import { DEFAULT_GOOD_MATCH_SCORE } from "../../src/search/scores.ts";
import { type Catalog, names, openCatalog, seeded, viewOf } from "./helpers.ts";

describe("score contract", () => {
  const scoresOf = (result: { tools: readonly { name: string; score: number }[] }) =>
    new Map(result.tools.map((t) => [t.name, t.score]));

  it("fts scores are in [0, 1] and non-increasing down the page", async () => {
    const { catalog } = await seeded();
    const scores = catalog.index.search({ query: "kubernetes pods list weather" }).tools.map((t) => t.score);
    expect(scores.length).toBeGreaterThan(1);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    for (const s of scores) expect(s >= 0 && s <= 1).toBe(true);
  });

  it("a tool's score does not depend on limit or on the other hits", async () => {
    const { catalog } = await seeded();
    const query = "kubernetes pods list weather";
    const wide = scoresOf(catalog.index.search({ query, limit: 20 }));
    const narrow = scoresOf(catalog.index.search({ query, limit: 1 }));
    const [name, score] = [...narrow][0] ?? ["", 0];
    expect(wide.get(name)).toBe(score);
    // A lone hit is not "0.5 because it is alone": it keeps the score it has beside others.
    expect(
      scoresOf(catalog.index.search({ query: "screenshot", limit: 1 })).get("browser.take_screenshot"),
    ).toBe(scoresOf(catalog.index.search({ query: "screenshot", limit: 20 })).get("browser.take_screenshot"));
  });

  it("a tool named like the query scores 1", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "list_pods" }).tools[0]).toMatchObject({
      name: "kubernetes.list_pods",
      score: 1,
    });
  });

  it("a tool matching every query word scores clearly above one matching a common word only", async () => {
    const { catalog } = await seeded();
    const scores = scoresOf(catalog.index.search({ query: "take a screenshot of the page", limit: 20 }));
    expect(scores.get("browser.take_screenshot")).toBeGreaterThanOrEqual(DEFAULT_GOOD_MATCH_SCORE);
  });

  it("a request no tool fits scores below the good-match threshold", async () => {
    const { catalog } = await seeded();
    const hits = catalog.index.search({ query: "delete the repository forever" }).tools;
    expect(hits.length).toBeGreaterThan(0); // "repository" is in createIssue's description
    for (const hit of hits) expect(hit.score).toBeLessThan(DEFAULT_GOOD_MATCH_SCORE);
  });

  it("words no tool has lower every score", async () => {
    const { catalog } = await seeded();
    const plain =
      scoresOf(catalog.index.search({ query: "weather forecast" })).get("weather.get_weather") ?? 0;
    const padded =
      scoresOf(catalog.index.search({ query: "weather forecast zqxj" })).get("weather.get_weather") ?? 1;
    expect(padded).toBeLessThan(plain);
  });
});

describe("typo repair", () => {
  it("repairs a misspelled word even when the other words match", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "chek the kubernetes api server" });
    expect(names(result)[0]).toBe("kubernetes.ping");
    expect(result.rewrites).toEqual([{ from: "chek", to: "check", kind: "typo" }]);
  });

  it("counts a swap of neighbours as one edit", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "wetaher forecast" });
    expect(names(result)[0]).toBe("weather.get_weather");
    expect(result.rewrites).toContainEqual({ from: "wetaher", to: "weather", kind: "typo" });
  });

  it("prefers the repair that appears beside the query's other words", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "list_nodes", description: "List the nodes of a Kubernetes cluster" },
      { name: "take_notes", description: "Take notes in a notebook" },
    ]);
    const result = catalog.index.search({ query: "nodas kubernetes" });
    expect(names(result)[0]).toBe("list_nodes");
    expect(result.rewrites).toEqual([{ from: "nodas", to: "nodes", kind: "typo" }]);
  });

  it("reads a swap of neighbours before another wrong letter that also spells a catalog word", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "get_status", description: "Get the status of a deployment" },
      { name: "list_starts", description: "List the starts of a deployment" },
    ]);
    const result = catalog.index.search({ query: "deployment stauts" });
    expect(names(result)[0]).toBe("get_status");
    expect(result.rewrites).toEqual([{ from: "stauts", to: "status", kind: "typo" }]);
  });

  it("leaves an English word the catalog lacks as it is, instead of reading it as a catalog word", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "fear_index", description: "The market's fear and greed index" },
    ]);
    expect(catalog.index.search({ query: "feat request" }).rewrites).toEqual([]);
  });

  it("reads a slip for a stopword as the stopword, not as a catalog word", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "cloud_costs", description: "Cloud spending by service" },
      { name: "send_email", description: "Send an email to a recipient" },
    ]);
    const result = catalog.index.search({ query: "colud you send an email" });
    expect(names(result)).toEqual(["send_email"]);
    expect(result.rewrites).toEqual([]);
  });

  it("never repairs an id, a path or a number", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [{ name: "read_report", description: "Read a report file" }]);
    expect(catalog.index.search({ query: "read ~/reprot.txt" }).rewrites).toEqual([]);
  });

  it("leaves short words alone: three letters are too few to tell a typo from another word", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "pds" }).rewrites).toEqual([]);
  });
});

describe("abbreviations and synonyms", () => {
  it("reads developer shorthand the word splitter would cut apart", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "k8s pods" });
    expect(names(result)[0]).toBe("kubernetes.list_pods");
    expect(result.rewrites).toContainEqual({ from: "k8s", to: "kubernetes", kind: "synonym" });
  });

  it("searches a word's synonyms beside the word itself", async () => {
    const { catalog } = await seeded();
    const result = catalog.index.search({ query: "send a slack msg" });
    expect(names(result)[0]).toBe("slack.send_message");
    expect(result.rewrites).toContainEqual({ from: "msg", to: "message", kind: "synonym" });
  });

  it("takes the operator's own synonyms from the config", async () => {
    const { catalog } = openCatalog({ synonyms: { snap: ["screenshot"] } });
    await catalog.registry.register("s", [
      { name: "take_screenshot", description: "Capture the page" },
      { name: "ping", description: "Check a host" },
    ]);
    const result = catalog.index.search({ query: "snap the page" });
    expect(names(result)[0]).toBe("take_screenshot");
    expect(result.rewrites).toEqual([{ from: "snap", to: "screenshot", kind: "synonym" }]);
  });

  it("never searches or reports a reading only hidden tools have", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "secret_repository_admin", description: "hidden" },
      { name: "list_pods", description: "List pods" },
    ]);
    const view = viewOf(await catalog.index.ready(), { isVisible: (t) => !t.name.startsWith("secret") });
    const result = catalog.index.search({ query: "repo pods", view });
    expect(names(result)).toEqual(["list_pods"]);
    expect(result.rewrites).toEqual([]);
  });
});

describe("tie-breaks", () => {
  it("prefers the configured namespace on equal relevance", async () => {
    const { catalog } = openCatalog({ preferredNamespaces: ["gitlab"] });
    await catalog.registry.register("s", [
      { name: "search", namespace: "github", description: "find code", sideEffects: "read" },
      { name: "search", namespace: "gitlab", description: "find code", sideEffects: "read" },
    ]);
    expect(names(catalog.index.search({ query: "find code" }))).toEqual(["gitlab.search", "github.search"]);
  });

  it("then prefers the safer side effect (pure < read < write < external < stateful)", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "t_stateful", description: "zebra", sideEffects: "stateful" },
      { name: "t_external", description: "zebra", sideEffects: "external" },
      { name: "t_writes", description: "zebra", sideEffects: "write" },
      { name: "t_reads", description: "zebra", sideEffects: "read" },
      { name: "t_pure", description: "zebra", sideEffects: "pure" },
    ]);
    expect(names(catalog.index.search({ query: "zebra" }))).toEqual([
      "t_pure",
      "t_reads",
      "t_writes",
      "t_external",
      "t_stateful",
    ]);
  });

  it("then the shorter name, then the name", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "ccc_long", description: "zebra", sideEffects: "read" },
      { name: "bbb", description: "zebra", sideEffects: "read" },
      { name: "aaa", description: "zebra", sideEffects: "read" },
    ]);
    expect(names(catalog.index.search({ query: "zebra" }))).toEqual(["aaa", "bbb", "ccc_long"]);
  });

  it("never overrides a real score difference", async () => {
    const { catalog } = openCatalog({ preferredNamespaces: ["pref"] });
    await catalog.registry.register("s", [
      { name: "other", namespace: "pref", description: "zebra", sideEffects: "pure" },
      { name: "zebra_zebra", namespace: "x", description: "zebra zebra stripes", sideEffects: "stateful" },
    ]);
    expect(names(catalog.index.search({ query: "zebra" }))[0]).toBe("x.zebra_zebra");
  });

  it("applies to regex results with equal scores", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "zz_tool", description: "x", sideEffects: "write" },
      { name: "zz_tool2", description: "x", sideEffects: "pure" },
    ]);
    expect(names(catalog.index.search({ query: "zz_.*", type: "regex" }))).toEqual(["zz_tool2", "zz_tool"]);
  });
});

describe("visibility", () => {
  const hideK8s = (t: { name: string }) => !t.name.startsWith("kubernetes.");
  const hidingK8s = (catalog: Catalog) =>
    catalog.index.ready().then((built) => viewOf(built, { isVisible: hideK8s }));

  it("never returns a hidden tool from any search type", async () => {
    const { catalog } = await seeded();
    for (const type of ["fts", "regex", "exact"] as const) {
      for (const query of ["kubernetes.list_pods", "list pods", "list_pods", "kube"]) {
        const result = catalog.index.search({ query, type, view: await hidingK8s(catalog) });
        expect(names(result).filter((n) => n.startsWith("kubernetes."))).toEqual([]);
      }
    }
  });

  it("counts total_deferred over visible tools only", async () => {
    const { catalog } = await seeded();
    expect(catalog.index.search({ query: "x" }).totalDeferred).toBe(6);
    expect(catalog.index.search({ query: "x", view: await hidingK8s(catalog) }).totalDeferred).toBe(4);
  });

  it("filters before the limit, so hidden tools do not take result slots", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "hidden_zebra", description: "zebra zebra zebra" },
      { name: "visible_zebra", description: "zebra" },
    ]);
    const view = viewOf(await catalog.index.ready(), { isVisible: (t) => t.name !== "hidden_zebra" });
    const result = catalog.index.search({ query: "zebra", limit: 1, view });
    expect(names(result)).toEqual(["visible_zebra"]);
  });

  it("hidden tools do not change the ranking of visible ones", async () => {
    const query = { query: "alpha beta", limit: 5 };
    const visible = [
      { name: "one", description: "alpha alpha beta" },
      { name: "two", description: "alpha beta beta" },
    ];
    const a = openCatalog().catalog;
    await a.registry.register("s", visible);
    const b = openCatalog().catalog;
    // Many hidden tools containing "beta" would make "alpha" rarer, i.e. more important, if counted.
    await b.registry.register("s", [
      ...visible,
      ...Array.from({ length: 30 }, (_, i) => ({ name: `h${i}`, description: "beta" })),
    ]);
    const onlyVisible = (t: { name: string }) => !t.name.startsWith("h");
    const withoutHidden = viewOf(await b.index.ready(), { isVisible: onlyVisible });
    // The order, not the scores: tools the operator's policy hides still count in the length average
    // of the global tools (another tenant's never do, see below; docs/search.md "Scores").
    expect(names(b.index.search({ ...query, view: withoutHidden }))).toEqual(names(a.index.search(query)));
  });

  it("another tenant's tools do not move a caller's scores, not even through length normalisation", async () => {
    const globalTools = [
      { name: "one", description: "alpha alpha beta" },
      { name: "two", description: "alpha beta beta and a much longer description of what it does" },
    ];
    const acmeTool = { name: "acme_tool", description: "alpha gamma" };
    const scores = async (otherTenantTools: number) => {
      const { catalog } = openCatalog();
      await catalog.registry.register("s", globalTools);
      await catalog.registry.register("acme", [acmeTool], { owner: "acme" });
      // Globex's tools are long, and share the query's words: counted, they would shift every length norm.
      const long = `alpha beta ${"filler ".repeat(60)}`;
      if (otherTenantTools > 0)
        await catalog.registry.register(
          "globex",
          Array.from({ length: otherTenantTools }, (_, i) => ({ name: `g${i}`, description: long })),
          { owner: "globex" },
        );
      const acme = viewOf(await catalog.index.ready(), { tenant: "acme" });
      const result = catalog.index.search({ query: "alpha beta", limit: 5, view: acme });
      return result.tools.map((hit) => [hit.name, hit.score]);
    };
    expect(await scores(40)).toEqual(await scores(0));
  });

  it("a caller never gets the candidates of a caller that sees other tools, in either order", async () => {
    const { catalog } = await seeded();
    const built = await catalog.index.ready();
    const callers = [
      viewOf(built, { isVisible: hideK8s }),
      viewOf(built, { isVisible: (t) => !t.name.startsWith("kubernetes.") }),
      viewOf(built),
    ];
    const [first, sameTools, everything] = callers.map((view) =>
      names(catalog.index.search({ query: "kubernetes.list_pods", type: "exact", view })),
    );
    expect(first).toEqual([]);
    expect(sameTools).toEqual([]);
    expect(everything).toEqual(["kubernetes.list_pods"]);
    // And in the other order: the caller that sees everything came first now.
    expect(names(catalog.index.search({ query: "list pods", view: await hidingK8s(catalog) }))).not.toContain(
      "kubernetes.list_pods",
    );
  });

  it("fuzzy widening only expands to words of visible tools", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "secret_wetter", description: "hidden" },
      { name: "get_weather", description: "forecast" },
    ]);
    const view = viewOf(await catalog.index.ready(), { isVisible: (t) => t.name !== "secret_wetter" });
    const result = catalog.index.search({ query: "wether", view });
    expect(names(result)).toEqual(["get_weather"]);
    expect(result.rewrites).toEqual([{ from: "wether", to: "weather", kind: "typo" }]);
  });

  it("exact search ranks namesakes by preferred namespace", async () => {
    const { catalog } = openCatalog({ preferredNamespaces: ["gitlab"] });
    await catalog.registry.register("s", [
      { name: "search", namespace: "github" },
      { name: "search", namespace: "gitlab" },
    ]);
    expect(names(catalog.index.search({ query: "search", type: "exact" }))).toEqual([
      "gitlab.search",
      "github.search",
    ]);
  });

  it("list pages only visible tools", async () => {
    const { catalog } = await seeded();
    const page = catalog.index.list({ view: await hidingK8s(catalog), showAll: true });
    expect(page.tools.map((t) => t.name)).not.toContain("kubernetes.ping");
    expect(page.totalSize).toBe(4);
  });
});

describe("catalog-derived text signals", () => {
  it("splits glued name parts into words the catalog's descriptions use", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "getrandomimage_for_miku", description: "Returns one picture" },
      { name: "list_albums", description: "Lists albums; get a random image id from each" },
      { name: "other_tool", description: "Unrelated words" },
    ]);
    expect(names(catalog.index.search({ query: "random image" }))).toContain("getrandomimage_for_miku");
  });

  it("matches a camelCase identifier in the query against a glued name", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "getimage_for_miku", description: "Returns a stored picture by file id" },
      { name: "get_weather_image", description: "Weather radar image" },
      { name: "get_image_tags", description: "Tags of an image" },
      { name: "get_thumbnail", description: "Small image of a video" },
      { name: "get_user", description: "A user's profile" },
    ]);
    expect(names(catalog.index.search({ query: "use the getImage API" }))[0]).toBe("getimage_for_miku");
  });
});

describe("pseudo-relevance feedback", () => {
  it("lifts a doc sharing the top results' vocabulary but not the query's words", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "forecast_today", description: "weather forecast with temperature humidity and precipitation" },
      {
        name: "forecast_week",
        description: "weather forecast for the week, temperature humidity precipitation",
      },
      { name: "rain_radar", description: "precipitation humidity temperature radar maps" },
      { name: "stock_quote", description: "stock price quote" },
      ...Array.from({ length: 30 }, (_, i) => ({
        name: `filler_${i}`,
        description: `unrelated filler text ${i}`,
      })),
    ]);
    const found = names(catalog.index.search({ query: "weather forecast", limit: 5 }));
    expect(found.slice(0, 2).sort()).toEqual(["forecast_today", "forecast_week"]);
    expect(found).toContain("rain_radar");
    expect(found).not.toContain("stock_quote");
  });
});
