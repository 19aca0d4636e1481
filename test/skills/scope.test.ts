import { describe, expect, it } from "vitest";
import { caller, fixture, GLOBAL, jsonSkill, rejected, thrown } from "./helpers.ts";

/** Tenant t1/p1 owns a secret skill; t2 and t1/p2 must not learn it exists. */
function world() {
  const f = fixture();
  const secret = [
    {
      path: "s.skill.json",
      content: jsonSkill({ name: "acme.secret_deploy", trigger: "deploy acme secretly" }),
    },
  ];
  f.service.loadSkillPack({
    pack: "acme",
    scope: { kind: "project", tenantId: "t1", projectId: "p1" },
    files: secret,
  });
  f.service.loadSkillPack({
    pack: "acmet",
    scope: { kind: "tenant", tenantId: "t1", projectId: "" },
    files: [
      {
        path: "t.skill.json",
        content: jsonSkill({ name: "acme.tenant_wide", trigger: "deploy tenant things" }),
      },
    ],
  });
  f.service.loadSkillPack({
    pack: "core",
    scope: GLOBAL,
    files: [
      { path: "g.skill.json", content: jsonSkill({ name: "core.deploy", trigger: "deploy anything" }) },
    ],
  });
  return f;
}

describe("scope isolation", () => {
  it("a caller sees its project's, its tenant's and global skills", () => {
    const { service } = world();
    expect(service.listSkills(caller("t1", "p1")).skills.map((s) => s.name)).toEqual([
      "acme.secret_deploy",
      "acme.tenant_wide",
      "core.deploy",
    ]);
    expect(service.listSkills(caller("t1", "p2")).skills.map((s) => s.name)).toEqual([
      "acme.tenant_wide",
      "core.deploy",
    ]);
  });

  it("another tenant gets NOT_FOUND for the exact name, identical to a missing skill", async () => {
    const { service } = world();
    const hidden = await rejected(service.getSkills(caller("t2"), { names: ["acme.secret_deploy"] }));
    const missing = await rejected(service.getSkills(caller("t2"), { names: ["acme.secret_deplox"] }));
    expect(hidden.code).toBe("not_found");
    expect(hidden.message).toBe(missing.message.replace("deplox", "deploy"));
  });

  it("another tenant's exact-name, regex '.*' and fts searches return only visible skills", () => {
    const { service } = world();
    const other = caller("t2");
    expect(service.searchSkills(other, { query: "acme.secret_deploy", type: "exact" }).skills).toEqual([]);
    expect(service.searchSkills(other, { query: ".*", type: "regex" }).skills.map((s) => s.name)).toEqual([
      "core.deploy",
    ]);
    expect(service.searchSkills(other, { query: "deploy secretly acme" }).skills.map((s) => s.name)).toEqual([
      "core.deploy",
    ]);
  });

  it("counts, directory and relevant skills include only visible skills", async () => {
    const { service } = world();
    const other = caller("t2");
    expect(service.listSkills(other).totalCount).toBe(1);
    const directory = service.renderSkillDirectory(other);
    expect(directory.totalVisible).toBe(1);
    expect(directory.text).not.toContain("acme");
    expect(
      (await service.getRelevantSkills(other, { task: "deploy acme secretly" })).formattedContext,
    ).not.toContain("acme");
  });

  it("an anonymous caller (no tenant) sees only global skills", () => {
    const { service } = world();
    expect(service.listSkills(caller("", "")).skills.map((s) => s.name)).toEqual(["core.deploy"]);
  });

  it("events of another tenant's calls carry that tenant and never the hidden names", async () => {
    const { service, sink } = world();
    service.searchSkills(caller("t2"), { query: "acme", type: "regex" });
    await rejected(service.getSkills(caller("t2"), { names: ["acme.secret_deploy"] }));
    const events = sink.events.filter((e) => e.tenantId === "t2");
    // The failed get emits nothing; the search's event is the tenant's own.
    expect(events.map((e) => e.type)).toEqual(["skill_search_query"]);
    expect(JSON.stringify(events)).not.toContain("secret");
  });

  it("a project skill shadows a global skill of the same name for that project only", async () => {
    const { service } = world();
    service.loadSkillPack({
      pack: "local",
      scope: { kind: "project", tenantId: "t1", projectId: "p1" },
      files: [
        { path: "d.skill.json", content: jsonSkill({ name: "core.deploy", trigger: "deploy our way" }) },
      ],
    });
    const mine = (await service.getSkills(caller("t1", "p1"), { names: ["core.deploy"] })).skills[0];
    const theirs = (await service.getSkills(caller("t2"), { names: ["core.deploy"] })).skills[0];
    expect([mine?.trigger, mine?.scope]).toEqual(["deploy our way", "project"]);
    expect([theirs?.trigger, theirs?.scope]).toEqual(["deploy anything", "global"]);
    expect(service.listSkills(caller("t1", "p1")).totalCount).toBe(3);
  });

  it("rejects tenant and project scopes without their ids", () => {
    const { service } = fixture();
    const files = [{ path: "a.skill.json", content: jsonSkill({}) }];
    expect(
      thrown(() =>
        service.loadSkillPack({ pack: "x", scope: { kind: "tenant", tenantId: "", projectId: "" }, files }),
      ).message,
    ).toBe("tenant scope needs a tenant_id");
  });
});
