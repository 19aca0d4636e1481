import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import { activateLazyGroups, activateVisible, compileLazyGroups } from "../../src/activation/index.ts";
import { callerArb, globsArb, nameArb, policyArb, rulesArb, toolsArb } from "../access/arbitraries.ts";
import { NO_ALWAYS } from "../access/fixtures.ts";
import { openStore } from "./helpers.ts";

describe("activation through access control (property)", () => {
  it("never stores a name access control refuses", async () => {
    const { store } = openStore();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        toolsArb,
        policyArb,
        rulesArb,
        callerArb,
        fc.array(nameArb, { minLength: 1, maxLength: 8 }),
        async (tools, policy, visibility, who, requested) => {
          run++;
          const me = { ...who, runId: `run-${run}`, sessionId: `session-${run}` };
          const access = createAccessControl({ policy, visibility, toolSearch: NO_ALWAYS }).forCaller(me);
          // Resolves names and aliases with no access check, as a careless catalog would.
          const resolve = (name: string) => tools.find((t) => t.name === name || t.aliases.includes(name));
          const scope = run % 2 === 0 ? "run" : "session";
          await activateVisible({ store, access, resolve }, me, requested, {
            scope,
            source: "explicit",
            reason: "p",
          });
          const byName = new Map(tools.map((t) => [t.name, t]));
          for (const name of store.activeFor(me)) {
            const t = byName.get(name);
            expect(t).toBeDefined();
            if (t !== undefined) expect(access.canActivate(t)).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("lazy groups never activate a tool access control refuses", async () => {
    const { store } = openStore();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        toolsArb,
        policyArb,
        rulesArb,
        callerArb,
        globsArb,
        async (tools, policy, visibility, who, members) => {
          run++;
          const me = { ...who, runId: `lazy-${run}` };
          const access = createAccessControl({ policy, visibility, toolSearch: NO_ALWAYS }).forCaller(me);
          const groups = compileLazyGroups([
            { name: "g", tools: members, triggers: { keywords: ["go"], regexes: [] } },
          ]);
          await activateLazyGroups({ store, access, groups }, me, "go now", tools);
          const byName = new Map(tools.map((t) => [t.name, t]));
          for (const name of store.activeFor(me)) {
            const t = byName.get(name);
            expect(t !== undefined && access.canActivate(t)).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
