import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { SearchIndex, ToolInput } from "../../src/discovery/index.ts";
import { visibleSet } from "../../src/discovery/views.ts";
import { names, openCatalog, seeded, viewOf } from "./helpers.ts";

/** Enough tools that building their index takes many slices of the event loop. */
function many(count: number, prefix = "bulk"): ToolInput[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `${prefix}.tool_${i}`,
    description: `Tool number ${i} reads record ${i % 97} from shelf ${i % 13} of the archive`,
    tags: [`shelf${i % 13}`],
  }));
}

const readyEvents = (events: readonly { type: string; attributes: Record<string, unknown> }[]) =>
  events.filter((e) => e.type === "tool_search_cache_ready").map((e) => e.attributes.tool_count);

describe("the search index after a change", () => {
  it("answers a read that waited for ready() with the change", async () => {
    const { catalog } = await seeded();
    await catalog.registry.register("more", [
      { name: "weather_alerts", description: "Severe weather alerts" },
    ]);
    await catalog.index.ready();
    expect(names(catalog.index.search({ query: "severe weather alerts" }))).toContain("weather_alerts");
  });

  it("answers a read that did not wait with the change (the build is finished on the spot)", async () => {
    const { catalog } = await seeded();
    await catalog.registry.register("more", many(2_000));
    expect(names(catalog.index.search({ query: "bulk.tool_1999", type: "exact" }))).toEqual([
      "bulk.tool_1999",
    ]);
  });

  it("is built between turns of the event loop, not in the turn of the change", async () => {
    const { catalog, events } = openCatalog();
    await catalog.registry.register("bulk", many(2_000));
    await nextTurn();
    expect(readyEvents(events)).toEqual([0]);
    await catalog.index.ready();
    expect(readyEvents(events)).toEqual([0, 2_000]);
  });

  it("abandons a build under way when a newer change arrives, and builds the newer one", async () => {
    const { catalog, events } = openCatalog();
    // 10,000 tools: enough that two ~10 ms slices never finish the build, even on a fast idle machine.
    await catalog.registry.register("bulk", many(10_000));
    // The first slices of the build run, then another source changes the catalog.
    await nextTurn();
    await nextTurn();
    await catalog.registry.register("late", [
      { name: "late.arrival", description: "Registered during a build" },
    ]);
    await catalog.index.ready();
    expect(readyEvents(events)).toEqual([0, 10_001]);
    expect(names(catalog.index.search({ query: "late.arrival", type: "exact" }))).toEqual(["late.arrival"]);
  });

  it("lets a waiting reader through while changes keep coming faster than a build", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("bulk", many(2_000));
    let built: SearchIndex | undefined;
    const reader = catalog.index.ready().then((ready) => {
      built = ready;
    });
    // A change every turn of the event loop, each of which would restart a build if it could.
    for (let i = 0; i < 500 && built === undefined; i++) {
      await catalog.registry.register(`churn${i}`, [
        { name: `churn.tool_${i}`, description: "Changes all the time" },
      ]);
      await nextTurn();
    }
    expect(built).toBeDefined();
    await reader;
    const view = viewOf(built as SearchIndex);
    expect(names(catalog.index.search({ query: "bulk.tool_1999", type: "exact", view }))).toEqual([
      "bulk.tool_1999",
    ]);
  });

  it("lets every reader waiting for the index through once it holds their writes", async () => {
    const { catalog } = await seeded();
    await catalog.registry.register("bulk", many(500));
    const first = catalog.index.ready();
    await catalog.registry.register("late", [{ name: "late.arrival" }]);
    const second = catalog.index.ready();
    await Promise.all([first, second]);
    expect(names(catalog.index.search({ query: "late.arrival", type: "exact" }))).toEqual(["late.arrival"]);
  });
});

describe("visible sets", () => {
  it("are made once per view value and build of the index, not once per search", async () => {
    const { catalog } = await seeded();
    const built = await catalog.index.ready();
    const view = viewOf(built);
    const findable = visibleSet(view, "findable");
    // The same caller's next call: another object of the same value.
    expect(visibleSet({ ...view, activeNames: [] }, "findable")).toBe(findable);
    expect(visibleSet(view, "activatable")).not.toBe(findable);
    await catalog.registry.register("more", [
      { name: "weather_alerts", description: "Severe weather alerts" },
    ]);
    const rebuilt = await catalog.index.ready();
    expect(rebuilt).not.toBe(built);
    const after = viewOf(rebuilt);
    expect(visibleSet(after, "findable")).not.toBe(findable);
    expect(names(catalog.index.search({ query: "severe weather alerts", view: after }))).toContain(
      "weather_alerts",
    );
  });

  it("keep the views read most recently when more kinds of view read a build than they hold", async () => {
    const { catalog } = await seeded();
    const built = await catalog.index.ready();
    const view = viewOf(built);
    const kept = visibleSet(view, "findable");
    const firstRun = { ...view, activeNames: ["run_0.tool"] };
    const firstRunSet = visibleSet(firstRun, "findable");
    // Hundreds of runs, each with its own activated tools, read the build between the caller's reads.
    for (let run = 1; run < 1_000; run++) {
      visibleSet({ ...view, activeNames: [`run_${run}.tool`] }, "findable");
      if (run % 100 === 0) expect(visibleSet(view, "findable")).toBe(kept);
    }
    // The first run's set, not read since, was let go (and is made again when read).
    expect(visibleSet(firstRun, "findable")).not.toBe(firstRunSet);
    expect(visibleSet(view, "findable")).toBe(kept);
  });
});

describe("the parameters a tool is found by", () => {
  it("include those its schema describes once under $defs and uses through $ref", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("maps", [
      {
        name: "maps.route",
        description: "Plan a route between two places.",
        argsSchema: {
          type: "object",
          $defs: {
            place: {
              type: "object",
              description: "A place",
              properties: { postcode: { type: "string", description: "Zip or postal code of the place" } },
            },
          },
          properties: { origin: { $ref: "#/$defs/place" }, destination: { $ref: "#/$defs/place" } },
        },
      },
      { name: "maps.zoom", description: "Zoom the map in or out." },
    ]);
    await catalog.index.ready();
    expect(names(catalog.index.search({ query: "postal code" }))).toEqual(["maps.route"]);
  });
});
