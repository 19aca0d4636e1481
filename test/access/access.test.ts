import { describe, expect, it } from "vitest";
import { createAccessControl } from "../../src/access/index.ts";
import type { PolicyConfig, VisibilityRuleConfig } from "../../src/config/types.ts";
import { VERDICT } from "../../src/discovery/index.ts";
import { caller, OPEN_POLICY, rule, tool } from "./fixtures.ts";

const control = (
  policy: Partial<PolicyConfig> = {},
  visibility: VisibilityRuleConfig[] = [],
  always: string[] = [],
) =>
  createAccessControl({
    policy: { ...OPEN_POLICY, ...policy },
    visibility,
    toolSearch: { alwaysLoadedPatterns: always },
  });

describe("static policy (registry)", () => {
  it("lets deny win over allow", () => {
    const ac = control({ allowed: ["github.*"], denied: ["github.delete_repo"] });
    expect(ac.inRegistry(tool("github.create_issue"))).toBe(true);
    expect(ac.inRegistry(tool("github.delete_repo"))).toBe(false);
  });

  it("applies deny globs to aliases too", () => {
    const ac = control({ denied: ["delete_repo"] });
    expect(ac.inRegistry(tool("github.delete_repo", { aliases: ["delete_repo"] }))).toBe(false);
  });

  it("does not let an alias satisfy an allow glob", () => {
    const ac = control({ allowed: ["safe.*"] });
    expect(ac.inRegistry(tool("danger.drop", { aliases: ["safe.drop"] }))).toBe(false);
  });

  it("requires every required tag", () => {
    const ac = control({ requireTags: ["reviewed", "prod"] });
    expect(ac.inRegistry(tool("a.x", { tags: ["Reviewed", "prod"] }))).toBe(true);
    expect(ac.inRegistry(tool("a.y", { tags: ["reviewed"] }))).toBe(false);
  });

  it("counts what the policy removes", () => {
    const ac = control({ denied: ["a.*"] });
    expect(ac.policyFilteredCount([tool("a.x"), tool("a.y"), tool("b.z")])).toBe(2);
  });
});

describe("visibility rules", () => {
  it("shows the whole registry when no rules are configured", () => {
    expect(control().forCaller(caller()).canActivate(tool("any.tool"))).toBe(true);
  });

  it("fails closed when rules exist but none matches the caller", () => {
    const ac = control({}, [rule({ tenant: "other" })]);
    expect(ac.forCaller(caller({ tenantId: "acme" })).canActivate(tool("any.tool"))).toBe(false);
  });

  it("unions the allows of all matching rules", () => {
    const ac = control({}, [rule({ tenant: "acme" }, ["github.*"]), rule({}, ["slack.*"])]);
    const access = ac.forCaller(caller());
    expect(access.canActivate(tool("github.x"))).toBe(true);
    expect(access.canActivate(tool("slack.x"))).toBe(true);
    expect(access.canActivate(tool("jira.x"))).toBe(false);
  });

  it("lets any matching rule's deny remove a tool another rule allows", () => {
    const ac = control({}, [rule({ tenant: "acme" }, ["*"]), rule({}, [], ["github.delete_*"])]);
    expect(ac.forCaller(caller()).canActivate(tool("github.delete_repo"))).toBe(false);
  });

  it("ignores rules that do not match the caller", () => {
    const ac = control({}, [rule({ tenant: "acme" }), rule({ tenant: "other" }, [], ["*"])]);
    expect(ac.forCaller(caller()).canActivate(tool("github.x"))).toBe(true);
  });

  it("matches an entitlement rule only when the caller holds all its entitlements", () => {
    const ac = control({}, [rule({}, ["public.*"]), rule({ entitlements: ["admin", "beta"] }, ["admin.*"])]);
    expect(ac.forCaller(caller({ entitlements: ["admin"] })).canActivate(tool("admin.x"))).toBe(false);
    expect(ac.forCaller(caller({ entitlements: ["beta", "admin"] })).canActivate(tool("admin.x"))).toBe(true);
  });

  it("never shows a tool outside the registry, whatever the rules allow", () => {
    const ac = control({ denied: ["secret.*"] }, [rule({}, ["*"])]);
    expect(ac.forCaller(caller()).canActivate(tool("secret.key"))).toBe(false);
  });
});

describe("narrowing", () => {
  it("only removes tools", () => {
    const ac = control({ denied: ["github.delete_repo"] });
    const access = ac.forCaller(caller({ narrowToTools: ["github.*"] }));
    expect(access.canActivate(tool("github.create_issue"))).toBe(true);
    expect(access.canActivate(tool("github.delete_repo"))).toBe(false);
    expect(access.canActivate(tool("slack.post"))).toBe(false);
  });

  it("rejects oversized caller narrowing with invalid_argument", () => {
    const huge = caller({ narrowToTools: Array.from({ length: 101 }, (_, i) => `t${i}.*`) });
    expect(() => control().forCaller(huge)).toThrowError(
      expect.objectContaining({ code: "invalid_argument" }),
    );
  });

  it("keys the cache by narrowing, so two narrowings never share verdicts", () => {
    const ac = control();
    const narrow = ac.forCaller(caller({ narrowToTools: ["a.*"] }));
    const wide = ac.forCaller(caller());
    expect(narrow.canActivate(tool("b.x"))).toBe(false);
    expect(wide.canActivate(tool("b.x"))).toBe(true);
    expect(ac.forCaller(caller({ narrowToTools: ["a.*"] }))).toBe(narrow);
  });
});

describe("always visible", () => {
  it("covers loading_mode always and always_loaded_patterns, only for visible tools", () => {
    const ac = control({ denied: ["core.secret"] }, [], ["core.*"]);
    const access = ac.forCaller(caller());
    expect(access.isAlwaysVisible(tool("x.y", { loadingMode: "always" }))).toBe(true);
    expect(access.isAlwaysVisible(tool("core.read"))).toBe(true);
    expect(access.isAlwaysVisible(tool("core.secret"))).toBe(false);
    expect(access.isAlwaysVisible(tool("x.z"))).toBe(false);
  });
});

describe("verdicts over a list of tools", () => {
  it("agree with the predicates, one byte a tool, and are worked out once per list", () => {
    const ac = control({ denied: ["core.secret"] }, [], ["core.*"]);
    const access = ac.forCaller(caller());
    const tools = [
      tool("core.read"),
      tool("core.secret"),
      tool("x.y"),
      tool("x.z", { loadingMode: "always" }),
    ];
    const verdicts = access.verdicts(tools);
    expect([...verdicts]).toEqual(
      tools.map(
        (t) =>
          (access.canActivate(t) ? VERDICT.canActivate : 0) |
          (access.isAlwaysVisible(t) ? VERDICT.alwaysVisible : 0),
      ),
    );
    expect([...verdicts]).toEqual([3, 0, 1, 3]);
    expect(access.verdicts(tools)).toBe(verdicts);
    expect(access.verdicts([...tools])).not.toBe(verdicts);
  });
});
