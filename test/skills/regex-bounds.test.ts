import { describe, expect, it } from "vitest";
import { caller, fixture, GLOBAL, jsonSkill, thrown } from "./helpers.ts";

/** 6,000 skills, each a few hundred characters of text. */
function largePack() {
  const f = fixture();
  const lines = Array.from({ length: 6_000 }, (_, i) =>
    jsonSkill({
      name: `bulk.skill_${i}`,
      title: `Bulk skill ${i}`,
      trigger: `when handling batch item ${i}`,
    }),
  );
  f.service.loadSkillPack({
    pack: "bulk",
    files: [{ path: "bulk.skill.jsonl", content: lines.join("\n") }],
    scope: GLOBAL,
  });
  return f;
}

describe("regex search bounds", () => {
  it("answers a pattern with literal text by pre-checking the literal, not running RE2 on every skill", () => {
    const { service } = largePack();
    const result = service.searchSkills(caller("t1"), { query: "skill_12\\d$", type: "regex", limit: 20 });
    expect(result.skills.map((skill) => skill.name).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `bulk.skill_12${i}`).sort(),
    );
  });

  it("answers a pattern every name matches from the first names in order, without scanning the rest", () => {
    const { service } = largePack();
    const result = service.searchSkills(caller("t1"), { query: ".*", type: "regex", limit: 3 });
    expect(result.skills.map((skill) => [skill.name, skill.matchType])).toEqual([
      ["bulk.skill_0", "regex_full_name"],
      ["bulk.skill_1", "regex_full_name"],
      ["bulk.skill_2", "regex_full_name"],
    ]);
  });

  it("refuses a pattern without literals that would run RE2 over too much skill text", () => {
    const f = fixture();
    // 1,000 skills of ~4 KB: few enough rows, but 4 MB of text for RE2 (0.25 s here, seconds at 5,000).
    const files = Array.from({ length: 8 }, (_, file) => ({
      path: `long${file}.skill.jsonl`,
      content: Array.from({ length: 125 }, (_, i) =>
        jsonSkill({ name: `long.skill_${file}_${i}`, description: "ab ".repeat(1300) }),
      ).join("\n"),
    }));
    f.service.loadSkillPack({ pack: "long", files, scope: GLOBAL });
    const error = thrown(() => f.service.searchSkills(caller("t1"), { query: "(x+x+)+y", type: "regex" }));
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toContain("more than 500000 characters of names and text");
  });

  it("runs a pattern without literals over text within the bound, and one with a literal over its candidates", () => {
    const f = fixture();
    // 250 skills of ~1.2 KB: 300 KB of text, within what one search may run RE2 over.
    const content = Array.from({ length: 250 }, (_, i) =>
      jsonSkill({ name: `mid.skill_${i}`, description: "ab ".repeat(400) }),
    ).join("\n");
    f.service.loadSkillPack({ pack: "mid", files: [{ path: "mid.skill.jsonl", content }], scope: GLOBAL });
    expect(f.service.searchSkills(caller("t1"), { query: "[a-z]+q", type: "regex" }).skills).toEqual([]);
    const found = f.service.searchSkills(caller("t1"), { query: "skill_12\\d$", type: "regex" });
    expect(found.skills.map((skill) => skill.name)).toContain("mid.skill_120");
  });
});
