import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/database/sqlite.ts";
import { SkillLibrary, skillsMigrations } from "../../src/skills/index.ts";
import { caller, GLOBAL, jsonSkill, tempDir } from "./helpers.ts";

const files = [
  { path: "pods.skill.json", content: jsonSkill({ name: "kubernetes.list_pods", trigger: "list pods" }) },
  { path: "pr.skill.json", content: jsonSkill({ name: "github.open_pr", trigger: "open a pull request" }) },
  {
    path: "retry.skill.json",
    content: jsonSkill({ name: "http.retry_429", trigger: "the API answers 429" }),
  },
];

const hasTable = (db: ReturnType<typeof openDatabase>, name: string) =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE name = ?").get(name) !== undefined;

describe("skills migrations", () => {
  it("skills/002 drops the FTS5 table of a database from before and keeps every skill, searching the same", () => {
    const file = join(tempDir(), "wayfind.db");
    // A database as skills/001 left it: skills in the table and, as the store then wrote them, in skills_fts.
    const before = openDatabase(file, skillsMigrations.slice(0, 1));
    const service = new SkillLibrary({ db: before });
    service.loadSkillPack({ pack: "core", scope: GLOBAL, files });
    before.exec(
      "INSERT INTO skills_fts (rowid, name, title, trigger_text, description, tags) SELECT seq, name, title, trigger_text, description, tags FROM skills",
    );
    expect(before.prepare("SELECT count(*) AS n FROM skills_fts").get()).toEqual({ n: 3 });
    const search = (s: SkillLibrary) => ({
      listed: s.listSkills(caller("t1")).skills.map((skill) => skill.name),
      fts: s.searchSkills(caller("t1"), { query: "pull request" }).skills,
      regex: s.searchSkills(caller("t1"), { query: "kubernetes", type: "regex" }).skills,
    });
    const answersBefore = search(service);
    before.close();

    const after = openDatabase(file, skillsMigrations);
    try {
      expect(hasTable(after, "skills_fts")).toBe(false);
      expect(after.prepare("SELECT count(*) AS n FROM skills").get()).toEqual({ n: 3 });
      const answersAfter = search(new SkillLibrary({ db: after }));
      expect(answersAfter.listed).toEqual(["github.open_pr", "http.retry_429", "kubernetes.list_pods"]);
      expect(answersAfter.fts.map((hit) => hit.name)).toEqual(["github.open_pr"]);
      expect(answersAfter).toEqual(answersBefore);
    } finally {
      after.close();
    }
  });

  it("a new database has the skills tables and no FTS5 table", () => {
    const db = openDatabase(join(tempDir(), "wayfind.db"), skillsMigrations);
    try {
      expect([hasTable(db, "skills"), hasTable(db, "skill_packs"), hasTable(db, "skills_fts")]).toEqual([
        true,
        true,
        false,
      ]);
    } finally {
      db.close();
    }
  });
});
