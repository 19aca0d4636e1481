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

  it("reaches a caller who sees no tool with its text as written, but the one tool it names", async () => {
    const { service, dir } = fixture();
    cpSync(join(import.meta.dirname, "../../demo/skills"), join(dir, "demo"), { recursive: true });
    service.loadSkillPack({ pack: "demo", version: "1", scope: GLOBAL, path: "demo" });
    const names = service.listSkills(caller("t1"), { pageSize: 100 }).skills.map((s) => s.name);
    const seesNothing = { isVisible: () => false, isKnownNamespace: () => false, narrowedAway: () => [] };
    // GetSkills takes ten names a call.
    const get = async (options = {}) =>
      (
        await Promise.all(
          [names.slice(0, 10), names.slice(10)].map((some) =>
            service.getSkills(caller("t1"), { names: some }, options),
          ),
        )
      ).flatMap((answer) => answer.skills);
    const asWritten = await get();
    const gated = await get({ toolGate: seesNothing });
    const changed = gated.flatMap((skill, i) =>
      skill.steps.flatMap((step, j) => (step === asWritten[i]?.steps[j] ? [] : [[skill.name, step]])),
    );
    expect(changed).toEqual([
      [
        "github.open_pr",
        expect.stringContaining('with tool_search for "create pull request"; title = summary'),
      ],
    ]);
    // Field names stay: the pagination skill's cursor fields, OAuth's grant_type=refresh_token, SQL's lock_timeout.
    const text = JSON.stringify(gated);
    for (const field of [
      "next_cursor",
      "next_page_token",
      "grant_type=refresh_token",
      "lock_timeout",
      "pg_stat_activity",
    ])
      expect(text).toContain(field);
  });
});
