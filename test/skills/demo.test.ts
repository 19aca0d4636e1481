import { cpSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { caller, fixture, GLOBAL } from "./helpers.ts";

describe("demo pack", () => {
  it("loads every demo skill, in every format, without a problem", async () => {
    const { service, dir } = fixture();
    cpSync(join(import.meta.dirname, "../../demo/skills"), join(dir, "demo"), { recursive: true });
    const result = service.loadSkillPack({ pack: "demo", version: "1", scope: GLOBAL, path: "demo" });
    expect(result.skillCount).toBe(13);
    const listed = service.listSkills(caller("t1"), { pageSize: 100 }).skills;
    expect(listed.find((s) => s.name === "ci.triage_failing_job")).toMatchObject({
      taskType: "code",
      tags: ["ci", "github-actions", "debugging"],
    });
    expect(listed.find((s) => s.name === "pack.demo.paginate-cursor-api")?.taskType).toBe("api");
    const relevant = await service.getRelevantSkills(caller("t1"), {
      task: "The API keeps answering 429 Too Many Requests",
    });
    expect(relevant.skills[0]?.name).toBe("http.retry_backoff");
  });
});
