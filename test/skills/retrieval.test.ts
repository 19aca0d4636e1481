import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { estimateTokens } from "../../src/text/tokens.ts";
import { caller, fixture, GLOBAL, jsonSkill, rejected, thrown } from "./helpers.ts";

function bigSkill(name: string, trigger: string, size: number) {
  return {
    path: `${name}.skill.json`,
    content: jsonSkill({
      name,
      trigger,
      description: `${trigger} in detail`,
      preconditions: Array.from({ length: size }, (_, i) => `precondition ${i} about ${trigger}`),
      steps: Array.from(
        { length: size * 2 },
        (_, i) => `step ${i}: ${"carefully do the next thing ".repeat(size)}`,
      ),
      failure_modes: Array.from({ length: size }, (_, i) => `failure ${i}: ${"it breaks ".repeat(size)}`),
    }),
  };
}

function loaded() {
  const f = fixture();
  f.service.loadSkillPack({
    pack: "core",
    scope: GLOBAL,
    files: [
      bigSkill("deploy.rollout", "deploy a service rollout", 3),
      bigSkill("deploy.huge", "deploy a huge monolith rollout", 40),
      bigSkill("db.migrate", "write a database migration", 2),
    ],
  });
  return f;
}

describe("getSkills", () => {
  it("returns skills in the requested order and lists the names it could not find", async () => {
    const { service } = loaded();
    const result = await service.getSkills(caller("t1"), { names: ["db.migrate", "nope", "deploy.rollout"] });
    expect(result.skills.map((s) => s.name)).toEqual(["db.migrate", "deploy.rollout"]);
    expect(result.notFound).toEqual(["nope"]);
  });

  it("never returns formattedContext over maxTokens, compressing structurally first", async () => {
    const { service } = loaded();
    const result = await service.getSkills(caller("t1"), {
      names: ["deploy.huge"],
      maxTokens: 400,
      format: "injection",
    });
    expect(result.finalTokensEst).toBeLessThanOrEqual(400);
    expect(estimateTokens(result.formattedContext)).toBe(result.finalTokensEst);
    expect(result.rawTokensEst).toBeGreaterThan(400);
    expect(result.wasCompressed).toBe(true);
    expect(result.formattedContext).toMatch(/<\/skills>$/);
  });

  it("drops failure modes before preconditions before steps", async () => {
    const { service } = loaded();
    const full = await service.getSkills(caller("t1"), { names: ["deploy.rollout"], maxTokens: 6000 });
    const target = estimateTokens(full.formattedContext) - 5;
    const result = await service.getSkills(caller("t1"), {
      names: ["deploy.rollout"],
      maxTokens: Math.max(200, target),
    });
    expect(result.formattedContext).not.toContain("Failure modes:");
    expect(result.formattedContext).toContain("Preconditions:");
    expect(result.formattedContext).toContain("step 5:");
  });

  it("rejects more than 10 names and maxTokens outside 200–6000", async () => {
    const { service } = loaded();
    const names = Array.from({ length: 11 }, (_, i) => `s${i}`);
    expect((await rejected(service.getSkills(caller("t1"), { names }))).message).toBe(
      "names must have 1–10 names, got 11",
    );
    expect(
      (await rejected(service.getSkills(caller("t1"), { names: ["db.migrate"], maxTokens: 100 }))).message,
    ).toBe("max_tokens must be 200–6,000, got 100");
  });

  it("records use: last_used and use_count", async () => {
    let now = 1000;
    const f = fixture({ now: () => now });
    f.service.loadSkillPack({ pack: "core", scope: GLOBAL, files: [bigSkill("db.migrate", "migrate", 1)] });
    now = 5000;
    await f.service.getSkills(caller("t1"), { names: ["db.migrate"] });
    const [skill] = (await f.service.getSkills(caller("t1"), { names: ["db.migrate"] })).skills;
    expect(skill?.stats).toMatchObject({ lastUsedAtMs: 5000, useCount: 1, createdAtMs: 1000 });
  });
});

describe("getRelevantSkills", () => {
  it("turns a task into one injection block of the best skills and reports the token estimates", async () => {
    const { service, sink } = loaded();
    const result = await service.getRelevantSkills(caller("t1"), {
      task: "We need to write a migration for the database",
      topK: 2,
    });
    expect(result.skills[0]?.name).toBe("db.migrate");
    expect(result.formattedContext.startsWith("<skills>")).toBe(true);
    expect(sink.ofType("skills_retrieved")[0]?.attributes).toEqual({
      skill_count: result.skills.length,
      top_k: 2,
      raw_tokens_est: result.rawTokensEst,
      final_tokens_est: result.finalTokensEst,
      was_compressed: result.wasCompressed,
      task_types: "unknown", // the one skill retrieved declares no task type
    });
  });

  it("never exceeds the budget for any task, topK and budget", async () => {
    const { service } = loaded();
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 80 }).map((s) => `deploy rollout migration ${s}`),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 200, max: 6000 }),
        async (task, topK, maxTokens) => {
          const result = await service.getRelevantSkills(caller("t1"), { task, topK, maxTokens });
          return estimateTokens(result.formattedContext) <= maxTokens && result.finalTokensEst <= maxTokens;
        },
      ),
      { numRuns: 150 },
    );
  });

  it("returns an empty block for a task that matches nothing", async () => {
    const { service } = loaded();
    const result = await service.getRelevantSkills(caller("t1"), { task: "zebra quantum" });
    expect(result).toMatchObject({ skills: [], formattedContext: "", finalTokensEst: 0 });
  });
});

describe("listSkills", () => {
  it("pages with an opaque token and reports the total", () => {
    const { service } = loaded();
    const first = service.listSkills(caller("t1"), { pageSize: 2 });
    expect(first.skills.map((s) => s.name)).toEqual(["db.migrate", "deploy.huge"]);
    expect(first.totalCount).toBe(3);
    const second = service.listSkills(caller("t1"), { pageSize: 2, pageToken: first.nextPageToken });
    expect(second.skills.map((s) => s.name)).toEqual(["deploy.rollout"]);
    expect(second.nextPageToken).toBe("");
  });

  it("reports the total as the library stands after a change, and pages on by name across it", () => {
    const { service } = loaded();
    const first = service.listSkills(caller("t1"), { pageSize: 2 });
    expect(first.totalCount).toBe(3);
    service.loadSkillPack({
      pack: "more",
      scope: GLOBAL,
      files: [
        bigSkill("deploy.canary", "deploy a canary first", 2),
        bigSkill("ztest.run", "run the tests", 2),
      ],
    });
    const second = service.listSkills(caller("t1"), { pageSize: 2, pageToken: first.nextPageToken });
    expect(second.totalCount).toBe(5);
    // The page goes on after the last name given ("deploy.huge"), the library as it is now.
    expect(second.skills.map((s) => s.name)).toEqual(["deploy.rollout", "ztest.run"]);
    expect(service.listSkills(caller("t1"), { pageSize: 5 }).skills.map((s) => s.name)).toEqual([
      "db.migrate",
      "deploy.canary",
      "deploy.huge",
      "deploy.rollout",
      "ztest.run",
    ]);
  });

  it("rejects a bad page token and page sizes over 100", () => {
    const { service } = loaded();
    expect(thrown(() => service.listSkills(caller("t1"), { pageToken: "garbage" })).code).toBe(
      "invalid_argument",
    );
    expect(thrown(() => service.listSkills(caller("t1"), { pageSize: 101 })).message).toBe(
      "page_size must be 1–100, got 101",
    );
  });
});

describe("renderSkillDirectory", () => {
  it("lists pinned skills first, then the most recently used", async () => {
    let now = 1;
    const f = fixture({ pinnedSkillNames: ["deploy.huge", "not.visible"], now: () => now++ });
    f.service.loadSkillPack({
      pack: "core",
      scope: GLOBAL,
      files: [bigSkill("a.one", "one", 1), bigSkill("b.two", "two", 1), bigSkill("deploy.huge", "huge", 1)],
    });
    await f.service.getSkills(caller("t1"), { names: ["b.two"] });
    const directory = f.service.renderSkillDirectory(caller("t1"), { maxEntries: 2 });
    expect(directory.text.split("\n").slice(1, 3)).toEqual(["- deploy.huge: huge", "- b.two: two"]);
    expect(directory).toMatchObject({ entryCount: 2, totalVisible: 3 });
    expect(f.sink.ofType("skill_directory_rendered")[0]?.attributes).toMatchObject({
      entry_count: 2,
      total_visible: 3,
    });
  });
});
