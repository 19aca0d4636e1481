import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/database/sqlite.ts";
import { skillsMigrations } from "../../src/skills/index.ts";
import { caller, fixture, GLOBAL, jsonSkill } from "./helpers.ts";

describe("in-memory search index", () => {
  it("sees skills loaded after the first search", () => {
    const { service } = fixture();
    service.loadSkillPack({
      pack: "a",
      scope: GLOBAL,
      files: [{ path: "a.skill.json", content: jsonSkill({ name: "alpha.one", trigger: "alpha" }) }],
    });
    expect(service.searchSkills(caller("t1"), { query: "beta" }).skills).toEqual([]);
    service.loadSkillPack({
      pack: "b",
      scope: GLOBAL,
      files: [{ path: "b.skill.json", content: jsonSkill({ name: "beta.one", trigger: "beta" }) }],
    });
    expect(service.searchSkills(caller("t1"), { query: "beta" }).skills.map((s) => s.name)).toEqual([
      "beta.one",
    ]);
  });

  it("sees writes made through another connection to the same database file", () => {
    const { service, dir } = fixture();
    expect(service.searchSkills(caller("t1"), { query: "gamma" }).skills).toEqual([]);
    const other = openDatabase(join(dir, "wayfind.db"), skillsMigrations);
    other
      .prepare(
        `INSERT INTO skills (id, name, name_tail, scope_kind, scope_rank, title, description, trigger_text, task_type, tags, steps,
           preconditions, failure_modes, extra, origin, content_hash, created_at_ms, updated_at_ms)
         VALUES ('sk_x', 'gamma.learned', 'learned', 'global', 0, 'Gamma', 'gamma', 'gamma', 'unknown', '[]', '["x"]', '[]', '[]', '{}', 'learned', 'h', 1, 1)`,
      )
      .run();
    other.close();
    expect(service.searchSkills(caller("t1"), { query: "gamma" }).skills.map((s) => s.name)).toEqual([
      "gamma.learned",
    ]);
  });
});
