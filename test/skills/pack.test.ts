import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { caller, fixture, GLOBAL, jsonSkill, thrown } from "./helpers.ts";

const md = `---
name: login-basic
title: Log in with username and password
trigger: A site shows a login form
task_type: browser
tags: [auth, login]
---
Some intro.
`;

const mdFromBody = `---
trigger: A cursor-paginated API returns next_cursor
---
# Paginate a cursor API

1. Call the endpoint without a cursor.
2. Repeat with \`cursor=<next_cursor>\` until it is empty.

## Failure modes
- The cursor expires: restart from the beginning.
`;

const agentSkill = `---
name: triage-ci
description: Find why a CI job failed. Use when a pipeline is red.
license: MIT
allowed-tools: Bash(git:*)
---
# Triage a failing CI job

## Prerequisites
- Access to the CI logs.

## Steps
1. Open the failed job and find the first error.
2. Reproduce locally.
   - use the same runtime version
3. Fix, push, watch the job.

## Troubleshooting
- Flaky test: re-run once, then quarantine.
`;

function inline(files: Record<string, string>) {
  return Object.entries(files).map(([path, content]) => ({ path, content }));
}

describe("pack formats", () => {
  it("loads md, yaml, json, jsonl and Agent Skills folders in one pack", () => {
    const { service } = fixture();
    const result = service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: inline({
        "login.skill.md": md
          .replace("Some intro.", "")
          .replace("tags: [auth, login]", "tags: [auth, login]\nsteps: [Open the page]"),
        "paginate.skill.md": mdFromBody,
        "retry.skill.yaml": "trigger: HTTP 429\nsteps:\n  - Wait Retry-After\n  - Retry with backoff\n",
        "many.skill.jsonl": `${jsonSkill({ title: "First" })}\n\n${jsonSkill({ title: "Second" })}\n`,
        "one.skill.json": jsonSkill({ name: "custom.name" }),
        "triage-ci/SKILL.md": agentSkill,
        "triage-ci/scripts/run.sh": "echo ignored",
        "README.md": "not a skill",
      }),
    });
    expect(result).toMatchObject({ skillCount: 7, loaded: 7, updated: 0, unchanged: 0 });
    const names = service.listSkills(caller("t1")).skills.map((s) => s.name);
    expect(names).toEqual([
      "custom.name",
      "login-basic",
      "pack.core.first",
      "pack.core.paginate",
      "pack.core.retry",
      "pack.core.second",
      "triage-ci",
    ]);
  });

  it("maps a markdown body: H1 → title, list items → steps, failure-mode section → failure modes", async () => {
    const { service } = fixture();
    service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: inline({ "paginate.skill.md": mdFromBody }),
    });
    const [skill] = (await service.getSkills(caller("t1"), { names: ["pack.core.paginate"] })).skills;
    expect(skill).toMatchObject({
      title: "Paginate a cursor API",
      steps: ["Call the endpoint without a cursor.", "Repeat with `cursor=<next_cursor>` until it is empty."],
      failureModes: ["The cursor expires: restart from the beginning."],
    });
  });

  it("maps Agent Skills SKILL.md: description → trigger and description, sections → preconditions/steps/failure modes", async () => {
    const { service } = fixture();
    service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: inline({ "triage-ci/SKILL.md": agentSkill }),
    });
    const [skill] = (await service.getSkills(caller("t1"), { names: ["triage-ci"] })).skills;
    expect(skill).toMatchObject({
      title: "Triage a failing CI job",
      trigger: "Find why a CI job failed. Use when a pipeline is red.",
      description: "Find why a CI job failed. Use when a pipeline is red.",
      preconditions: ["Access to the CI logs."],
      failureModes: ["Flaky test: re-run once, then quarantine."],
      extra: { license: "MIT", "allowed-tools": "Bash(git:*)" },
    });
    expect(skill?.steps).toHaveLength(3);
    expect(skill?.steps[1]).toBe("Reproduce locally.\n- use the same runtime version");
  });

  it("uses body paragraphs as steps when the body has no list", async () => {
    const { service } = fixture();
    const file = "---\ntrigger: t\n---\nFirst do this.\n\nThen do that,\ncarefully.\n";
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files: inline({ "p.skill.md": file }) });
    const [skill] = (await service.getSkills(caller("t1"), { names: ["pack.core.p"] })).skills;
    expect(skill?.steps).toEqual(["First do this.", "Then do that,\ncarefully."]);
  });

  it("keeps unknown fields in extra", async () => {
    const { service } = fixture();
    service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: inline({ "a.skill.json": jsonSkill({ owner: "platform", sla: { hours: 4 } }) }),
    });
    const [skill] = (await service.getSkills(caller("t1"), { names: ["pack.core.a"] })).skills;
    expect(skill?.extra).toEqual({ owner: "platform", sla: { hours: 4 } });
  });

  it("makes colliding default names unique deterministically in file-path order", () => {
    const { service } = fixture();
    const files = inline({
      "b/login.skill.yaml": "trigger: b\nsteps: [x]\n",
      "a/login.skill.yaml": "trigger: a\nsteps: [x]\n",
    });
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files });
    const skills = service.listSkills(caller("t1")).skills;
    expect(skills.map((s) => [s.name, s.trigger])).toEqual([
      ["pack.core.login", "a"],
      ["pack.core.login-2", "b"],
    ]);
  });

  it("loads a pack from a folder inside the pack roots", () => {
    const { service, dir } = fixture();
    mkdirSync(join(dir, "pack/triage-ci"), { recursive: true });
    writeFileSync(join(dir, "pack/triage-ci/SKILL.md"), agentSkill);
    writeFileSync(join(dir, "pack/retry.skill.yml"), "trigger: HTTP 429\nsteps: [wait]\n");
    expect(service.loadSkillPack({ pack: "core", scope: GLOBAL, path: "pack" }).loaded).toBe(2);
  });
});

describe("pack validation is all-or-nothing and lists every problem", () => {
  it("rejects a pack with several bad files, naming file, line and field of each, and loads nothing", () => {
    const { service } = fixture();
    const error = thrown(() =>
      service.loadSkillPack({
        pack: "core",
        scope: GLOBAL,
        files: inline({
          "good.skill.json": jsonSkill({}),
          "broken.skill.md": "---\ntrigger: [unclosed\n---\nbody\n",
          "types.skill.yaml": "trigger: 42\nsteps: [ok, {a: 1}]\ntask_type: spaceship\n",
          "empty.skill.json": jsonSkill({ steps: [] }),
          "lines.skill.jsonl": `${jsonSkill({})}\n{not json\n`,
        }),
      }),
    );
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toContain("nothing was loaded");
    const details = error.details.join("\n");
    expect(details).toMatch(/broken\.skill\.md:\d+: invalid YAML/);
    expect(details).toContain("types.skill.yaml:1: trigger: must be a string, got number 42");
    expect(details).toContain("types.skill.yaml:1: steps[1]: must be a string, got a mapping");
    expect(details).toContain(
      "types.skill.yaml:1: task_type: must be one of browser, api, code, domain, unknown",
    );
    expect(details).toContain(
      "empty.skill.json:1: steps: steps (or a markdown body) must be a non-empty list of strings",
    );
    expect(details).toMatch(/lines\.skill\.jsonl:2: invalid JSON/);
    expect(service.listSkills(caller("t1")).totalCount).toBe(0);
  });

  it("rejects a missing trigger and description", () => {
    const { service } = fixture();
    const error = thrown(() =>
      service.loadSkillPack({
        pack: "core",
        scope: GLOBAL,
        files: inline({ "a.skill.json": '{"steps":["x"]}' }),
      }),
    );
    expect(error.details).toEqual([
      "a.skill.json:1: trigger: trigger (or description) is required and must be a non-empty string",
    ]);
  });

  it("rejects explicit duplicate names, pointing at the first definition", () => {
    const { service } = fixture();
    const error = thrown(() =>
      service.loadSkillPack({
        pack: "core",
        scope: GLOBAL,
        files: inline({
          "a.skill.json": jsonSkill({ name: "dup" }),
          "b.skill.json": jsonSkill({ name: "dup" }),
        }),
      }),
    );
    expect(error.details).toEqual([
      'b.skill.json:1: name: duplicate name "dup", first defined in a.skill.json:1',
    ]);
  });

  it("rejects binary files", () => {
    const { service, dir } = fixture();
    mkdirSync(join(dir, "pack"));
    writeFileSync(join(dir, "pack/bin.skill.md"), Buffer.from([0x2d, 0x2d, 0x2d, 0x0a, 0x00, 0xff, 0xfe]));
    const inlineError = thrown(() =>
      service.loadSkillPack({
        pack: "core",
        scope: GLOBAL,
        files: inline({ "x.skill.md": "---\u0000\u0001" }),
      }),
    );
    const folderError = thrown(() => service.loadSkillPack({ pack: "core", scope: GLOBAL, path: "pack" }));
    expect(inlineError.details).toEqual([
      "x.skill.md: file is binary (control characters or invalid UTF-8); expected text",
    ]);
    expect(folderError.details).toEqual([
      "bin.skill.md: file is binary (control characters or invalid UTF-8); expected text",
    ]);
  });

  it("caps file size and pack size", () => {
    const { service } = fixture({ packLimits: { maxFileBytes: 1000, maxPackBytes: 1500 } });
    const big = jsonSkill({ description: "x".repeat(2000) });
    const medium = jsonSkill({ description: "y".repeat(800) });
    const error = thrown(() =>
      service.loadSkillPack({
        pack: "core",
        scope: GLOBAL,
        files: inline({ "big.skill.json": big, "m1.skill.json": medium, "m2.skill.json": medium }),
      }),
    );
    expect(error.details).toContain(`big.skill.json: file is ${big.length} bytes; the limit is 1000 bytes`);
    expect(error.details.some((d) => d.includes("the limit is 1500 bytes"))).toBe(true);
  });

  it("rejects path traversal in inline file paths", () => {
    const { service } = fixture();
    for (const path of [
      "../../etc/x.skill.md",
      "a/../../x.skill.json",
      "/etc/x.skill.json",
      "a\\..\\x.skill.json",
    ]) {
      const error = thrown(() =>
        service.loadSkillPack({ pack: "core", scope: GLOBAL, files: [{ path, content: jsonSkill({}) }] }),
      );
      expect(error.code).toBe("invalid_argument");
      expect(error.details[0]).toMatch(/path traversal|must be relative|'\/' separators/);
    }
  });

  it("rejects a server-side pack path outside the pack roots", () => {
    const { service } = fixture();
    const error = thrown(() => service.loadSkillPack({ pack: "core", scope: GLOBAL, path: "../../etc" }));
    expect(error.message).toMatch(/outside the allowed pack roots|does not exist/);
    const abs = thrown(() => service.loadSkillPack({ pack: "core", scope: GLOBAL, path: "/etc" }));
    expect(abs.message).toContain("outside the allowed pack roots");
  });

  it("rejects symlinks that point out of the pack folder", () => {
    const { service, dir } = fixture();
    mkdirSync(join(dir, "pack"));
    writeFileSync(join(dir, "outside.skill.json"), jsonSkill({}));
    writeFileSync(join(dir, "pack/ok.skill.json"), jsonSkill({}));
    symlinkSync(join(dir, "outside.skill.json"), join(dir, "pack/link.skill.json"));
    symlinkSync("/etc", join(dir, "pack/etc"));
    const error = thrown(() => service.loadSkillPack({ pack: "core", scope: GLOBAL, path: "pack" }));
    expect(error.details).toEqual([
      "etc: symlink points outside the pack folder",
      "link.skill.json: symlink points outside the pack folder",
    ]);
    expect(service.listSkills(caller("t1")).totalCount).toBe(0);
  });

  it("keeps the previous version when a new version is invalid", () => {
    const { service } = fixture();
    service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: inline({ "a.skill.json": jsonSkill({ trigger: "v1" }) }),
    });
    thrown(() =>
      service.loadSkillPack({
        pack: "core",
        scope: GLOBAL,
        files: inline({ "a.skill.json": jsonSkill({ trigger: "v2" }), "b.skill.json": "{" }),
      }),
    );
    expect(service.listSkills(caller("t1")).skills.map((s) => s.trigger)).toEqual(["v1"]);
  });
});

describe("pack upsert", () => {
  const v1 = inline({
    "a.skill.json": jsonSkill({ trigger: "a" }),
    "b.skill.json": jsonSkill({ trigger: "b" }),
  });

  it("reloading an unchanged pack writes nothing", () => {
    const { service, db } = fixture();
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files: v1 });
    const changes = db.prepare("SELECT total_changes() AS n").get() as { n: number };
    const again = service.loadSkillPack({ pack: "core", scope: GLOBAL, files: v1 });
    expect(again).toMatchObject({ loaded: 0, updated: 0, unchanged: 2 });
    expect(db.prepare("SELECT total_changes() AS n").get()).toEqual(changes);
  });

  it("updates changed pack skills, adds new ones and removes dropped ones", () => {
    const { service } = fixture();
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files: v1 });
    const v2 = inline({
      "a.skill.json": jsonSkill({ trigger: "a2" }),
      "c.skill.json": jsonSkill({ trigger: "c" }),
    });
    const result = service.loadSkillPack({ pack: "core", scope: GLOBAL, files: v2, version: "2" });
    expect(result).toMatchObject({ loaded: 1, updated: 1, unchanged: 0, removed: 1 });
    expect(service.listSkills(caller("t1")).skills.map((s) => s.trigger)).toEqual(["a2", "c"]);
  });

  it("leaves changed skills alone when updateExistingPackSkills is false", () => {
    const { service } = fixture();
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files: v1 });
    const v2 = inline({
      "a.skill.json": jsonSkill({ trigger: "a2" }),
      "b.skill.json": jsonSkill({ trigger: "b" }),
    });
    const result = service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: v2,
      updateExistingPackSkills: false,
    });
    expect(result).toMatchObject({ updated: 0, unchanged: 1, notUpdated: 1 });
    expect(service.listSkills(caller("t1")).skills.map((s) => s.trigger)).toEqual(["a", "b"]);
  });

  it("never overwrites a learned skill of the same name", async () => {
    const { service, db } = fixture();
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files: v1 });
    db.prepare(
      "UPDATE skills SET origin = 'learned', trigger_text = 'learned' WHERE name = 'pack.core.a'",
    ).run();
    const result = service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: inline({ "a.skill.json": jsonSkill({ trigger: "pack" }) }),
    });
    expect(result.skippedLearned).toEqual(["pack.core.a"]);
    const [skill] = (await service.getSkills(caller("t1"), { names: ["pack.core.a"] })).skills;
    expect(skill).toMatchObject({ origin: "learned", trigger: "learned" });
  });

  it("emits skill_pack_loaded with counts and reports progress", () => {
    const { service, sink } = fixture();
    const phases: string[] = [];
    service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: v1,
      onProgress: (p) => phases.push(p.phase),
    });
    expect(sink.ofType("skill_pack_loaded")[0]?.attributes).toMatchObject({
      pack: "core",
      skill_count: 2,
      updated_count: 0,
    });
    expect(new Set(phases)).toEqual(new Set(["read", "parse", "write"]));
  });

  it("assigns sk_ ids and a content hash that changes only with content", async () => {
    const { service } = fixture();
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files: v1 });
    const first = (await service.getSkills(caller("t1"), { names: ["pack.core.a"] })).skills[0];
    expect(first?.id).toMatch(/^sk_[0-9a-f]{24}$/);
    expect(first?.contentHash).toMatch(/^[0-9a-f]{64}$/);
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files: v1, version: "9" });
    expect((await service.getSkills(caller("t1"), { names: ["pack.core.a"] })).skills[0]?.contentHash).toBe(
      first?.contentHash,
    );
  });
});
