import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import { callerArb, policyArb, referenceCanActivate, refGlob, rulesArb, toolsArb } from "./arbitraries.ts";
import { caller, NO_ALWAYS, OPEN_POLICY, tool } from "./fixtures.ts";

const RUNS = { numRuns: 500 };

describe("canActivate (property)", () => {
  it("agrees with the documented semantics on random tools, policies, rules and callers", () => {
    fc.assert(
      fc.property(toolsArb, policyArb, rulesArb, callerArb, (tools, policy, visibility, who) => {
        const access = createAccessControl({ policy, visibility, toolSearch: NO_ALWAYS }).forCaller(who);
        for (const t of tools)
          expect(access.canActivate(t)).toBe(referenceCanActivate(policy, visibility, who, t));
      }),
      RUNS,
    );
  });

  it("never admits a policy-denied, untagged, rule-denied or narrowed-out tool", () => {
    fc.assert(
      fc.property(toolsArb, policyArb, rulesArb, callerArb, (tools, policy, visibility, who) => {
        const access = createAccessControl({ policy, visibility, toolSearch: NO_ALWAYS }).forCaller(who);
        for (const t of tools.filter((x) => access.canActivate(x))) {
          const namesOf = [t.name, ...t.aliases];
          expect(policy.denied.some((g) => namesOf.some((n) => refGlob(g, n)))).toBe(false);
          expect(policy.requireTags.every((tag) => t.tags.includes(tag))).toBe(true);
          for (const r of visibility) {
            const matches =
              (r.match.tenant === undefined || r.match.tenant === who.tenantId) &&
              (r.match.entitlements ?? []).every((e) => who.entitlements.includes(e));
            if (matches) expect(r.deny.some((g) => namesOf.some((n) => refGlob(g, n)))).toBe(false);
          }
          if (who.narrowToTools.length > 0)
            expect(who.narrowToTools.some((g) => refGlob(g, t.name))).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it("narrowing never widens: the narrowed set is a subset of the un-narrowed one", () => {
    fc.assert(
      fc.property(toolsArb, policyArb, rulesArb, callerArb, (tools, policy, visibility, who) => {
        const ac = createAccessControl({ policy, visibility, toolSearch: NO_ALWAYS });
        const narrowed = ac.forCaller(who);
        const full = ac.forCaller({ ...who, narrowToTools: [] });
        for (const t of tools) if (narrowed.canActivate(t)) expect(full.canActivate(t)).toBe(true);
      }),
      RUNS,
    );
  });
});

describe("classic leaks", () => {
  const denied = tool("github.delete_repo", { aliases: ["delete_repo"] });
  const ac = createAccessControl({
    policy: { ...OPEN_POLICY, denied: ["github.delete_repo"] },
    visibility: [],
    toolSearch: NO_ALWAYS,
  });

  it("a regex-style .* narrowing or allow does not re-admit a denied tool", () => {
    expect(ac.forCaller(caller({ narrowToTools: [".*"] })).canActivate(denied)).toBe(false);
    expect(ac.forCaller(caller({ narrowToTools: ["*"] })).canActivate(denied)).toBe(false);
  });

  it("naming the denied tool exactly, in any case, in a narrowing does not admit it", () => {
    expect(ac.forCaller(caller({ narrowToTools: ["GITHUB.DELETE_REPO"] })).canActivate(denied)).toBe(false);
  });

  it("a deny written against an alias hides the tool", () => {
    const byAlias = createAccessControl({
      policy: { ...OPEN_POLICY, denied: ["delete_repo"] },
      visibility: [],
      toolSearch: NO_ALWAYS,
    });
    expect(byAlias.forCaller(caller()).canActivate(denied)).toBe(false);
  });
});
