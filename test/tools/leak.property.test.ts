import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import { ActivationStore, compileLazyGroups } from "../../src/activation/index.ts";
import type { Caller } from "../../src/caller/caller.ts";
import { openDatabase } from "../../src/database/sqlite.ts";
import { IndexHost, type Tool, ToolRegistry } from "../../src/discovery/index.ts";
import { WayfindError } from "../../src/errors.ts";
import type { NewEvent } from "../../src/events/index.ts";
import { allMigrations } from "../../src/server/migrations.ts";
import { ToolService } from "../../src/tools/service.ts";
import { callerArb, policyArb, rulesArb, toolsArb } from "../access/arbitraries.ts";
import { notFoundMessage } from "./helpers.ts";

const TOOL_SEARCH = {
  enabled: true,
  defaultLoadingMode: "deferred" as const,
  alwaysLoadedPatterns: [],
  activationScope: "run" as const,
  dispatch: false,
  preferredNamespaces: [],
  maxSearchResults: 10,
  runActivationTtlSeconds: 3600,
  goodMatchScore: 0.5,
  synonyms: {},
};

/** A real catalog in SQLite behind the real ToolService, with every event captured. */
async function world(
  tools: readonly Tool[],
  policy: Parameters<typeof createAccessControl>[0]["policy"],
  visibility: Parameters<typeof createAccessControl>[0]["visibility"],
) {
  const db = openDatabase(":memory:", allMigrations);
  const events: NewEvent[] = [];
  const sink = { emit: (event: NewEvent) => void events.push(event) };
  const registry = new ToolRegistry(db);
  await registry.register(
    "random",
    tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      tags: tool.tags,
      loadingMode: tool.loadingMode,
      aliases: tool.aliases,
      argsSchema: tool.argsSchema,
      examples: tool.examples,
    })),
  );
  const access = createAccessControl({ policy, visibility, toolSearch: TOOL_SEARCH });
  const service = new ToolService({
    registry,
    index: new IndexHost(registry, { events: sink }),
    access,
    activations: new ActivationStore(db, { events: sink, runActivationTtlSeconds: 3600 }),
    lazyGroups: compileLazyGroups([]),
    toolSearch: TOOL_SEARCH,
    events: sink,
  });
  return { service, registry, access, events, close: () => db.close() };
}

describe("nothing hidden leaks through the tool service (property)", () => {
  it("search, get, list, render, resolve, activate, errors and events only ever show visible tools", async () => {
    await fc.assert(
      fc.asyncProperty(toolsArb, policyArb, rulesArb, callerArb, async (tools, policy, visibility, who) => {
        let w: Awaited<ReturnType<typeof world>>;
        try {
          w = await world(tools, policy, visibility);
        } catch (error) {
          // Random catalogs may be invalid (an alias equal to another tool's name): not this property.
          fc.pre(!(error instanceof WayfindError));
          throw error;
        }
        try {
          const caller: Caller = { ...who, sessionId: "s", runId: "r" };
          const registered = [...w.registry.all()];
          const view = w.access.forCaller(caller);
          const visibleNames = new Set(
            registered
              .filter((tool) => view.canActivate(tool))
              .flatMap((tool) => [tool.name, ...tool.aliases]),
          );
          // Names a caller must never learn: hidden tools' names and aliases that no visible tool answers to.
          const secret = new Set(
            registered
              .filter((tool) => !view.canActivate(tool))
              .flatMap((tool) => [tool.name, ...tool.aliases])
              .filter((name) => !visibleNames.has(name)),
          );
          const assertNoSecret = (names: Iterable<string>) => {
            for (const name of names) expect(secret.has(name), `leaked ${name}`).toBe(false);
          };

          const everything = { query: ".*", type: "regex" as const, limit: 20, includeAlwaysLoaded: true };
          assertNoSecret((await w.service.search(caller, everything)).tools.map((hit) => hit.name));
          for (const name of secret) {
            const exact = { query: name, type: "exact" as const, includeAlwaysLoaded: true };
            assertNoSecret((await w.service.search(caller, exact)).tools.map((hit) => hit.name));
            assertNoSecret(
              (await w.service.search(caller, { query: name, includeAlwaysLoaded: true })).tools.map(
                (hit) => hit.name,
              ),
            );
          }
          const got = w.service.get(
            caller,
            registered.map((tool) => tool.name),
          );
          assertNoSecret(got.tools.map((tool) => tool.name));
          assertNoSecret(
            (await w.service.list(caller, { showAll: true, pageSize: 500 })).tools.map((tool) => tool.name),
          );
          assertNoSecret((await w.service.renderPrompt(caller, { includeDirectory: true })).visibleTools);

          for (const name of secret) {
            const hidden = await notFoundMessage(() => w.service.resolve(caller, name, undefined));
            const missing = await notFoundMessage(() => w.service.resolve(caller, "no.such.tool", undefined));
            expect(hidden.replace(name, "X")).toBe(missing.replace("no.such.tool", "X"));
            await notFoundMessage(() => w.service.activate(caller, [name], undefined, "try"));
          }
          for (const { attributes } of w.events) {
            // A query echoes what the caller typed itself; every other attribute is wayfind's own words.
            const { query: _echo, ...ownWords } = attributes;
            assertNoSecret(
              Object.values(ownWords).filter((value): value is string => typeof value === "string"),
            );
          }
        } finally {
          w.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});
