import { describe, expect, it } from "vitest";
import type { ToolGate } from "../../src/skills/index.ts";
import { caller, fixture, GLOBAL, jsonSkill } from "./helpers.ts";

// The caller sees fs.read_file only; nothing was narrowed away, so a tenant's own text stays as written.
// Its catalog has tools under fs and hr (hr's hidden from it).
const gate: ToolGate = {
  isVisible: (name) => name === "fs.read_file",
  isKnownNamespace: (namespace) => namespace === "fs" || namespace === "hr",
  narrowedAway: () => [],
};

async function operatorStep(step: string): Promise<string | undefined> {
  const f = fixture();
  f.service.loadSkillPack({
    pack: "core",
    scope: GLOBAL,
    files: [{ path: "s.skill.json", content: jsonSkill({ name: "s.one", trigger: "t", steps: [step] }) }],
  });
  return (await f.service.getSkills(caller("t1"), { names: ["s.one"] }, { toolGate: gate })).skills[0]
    ?.steps[0];
}

function loaded() {
  const f = fixture();
  f.service.loadSkillPack({
    pack: "core",
    scope: GLOBAL,
    files: [
      {
        path: "pr.skill.json",
        content: jsonSkill({
          name: "git.open_pr",
          trigger: "open a PR with github.create_pull_request",
          steps: [
            "Read the template with `fs.read_file`.",
            "Call `github.create_pull_request` with title and body.",
            "Ask for review via github.create_pull_request_review.",
          ],
          "allowed-tools": ["github.create_pull_request"],
        }),
      },
    ],
  });
  return f;
}

describe("tool-reference gating", () => {
  it("rewrites hidden tool names to a tool_search hint and keeps visible ones", async () => {
    const { service } = loaded();
    const [skill] = (await service.getSkills(caller("t1"), { names: ["git.open_pr"] }, { toolGate: gate }))
      .skills;
    expect(skill?.steps).toEqual([
      "Read the template with `fs.read_file`.",
      'Call tool_search for "create pull request" with title and body.',
      'Ask for review via tool_search for "create pull request review".',
    ]);
    expect(JSON.stringify(skill)).not.toContain("github.create");
  });

  it("applies to search results, injection blocks, lists and the directory", async () => {
    const { service } = loaded();
    const t = caller("t1");
    const outputs = [
      service.searchSkills(t, { query: "open PR" }, { toolGate: gate }),
      await service.getRelevantSkills(t, { task: "open a PR" }, { toolGate: gate }),
      service.listSkills(t, {}, { toolGate: gate }),
      service.renderSkillDirectory(t, {}, { toolGate: gate }),
    ];
    for (const output of outputs) expect(JSON.stringify(output)).not.toContain("github.create");
  });

  it("does not let a regex probe for a hidden tool name", () => {
    const { service } = loaded();
    const result = service.searchSkills(
      caller("t1"),
      { query: "create_pull_request", type: "regex" },
      { toolGate: gate },
    );
    expect(result.skills).toEqual([]);
  });

  it("keeps names in a tenant's own text unless its narrowing removed them", async () => {
    const f = fixture();
    f.service.loadSkillPack({
      pack: "mine",
      scope: { kind: "tenant", tenantId: "t1", projectId: "" },
      files: [
        {
          path: "pr.skill.json",
          content: jsonSkill({
            name: "t1.open_pr",
            trigger: "call github.create_pull_request",
            steps: ["go"],
          }),
        },
      ],
    });
    const [skill] = (await f.service.getSkills(caller("t1"), { names: ["t1.open_pr"] }, { toolGate: gate }))
      .skills;
    expect(skill?.trigger).toBe("call github.create_pull_request");
  });

  it("rewrites, in operator text, a tool-like name of no tool as it rewrites a hidden one", async () => {
    expect(await operatorStep("Then call billing.refund_all or jira.createIssue.")).toBe(
      'Then call tool_search for "refund all" or tool_search for "create issue".',
    );
  });

  it("leaves, in operator text, words that only resemble tool names", async () => {
    const step =
      "Set GITHUB_TOKEN, edit my_notes.txt and package.json, see https://x.example/api_docs or ops@corp_mail.example, run --dry_run, use iPhone or GitHub.";
    expect(await operatorStep(step)).toBe(step);
  });

  it("rewrites what reads as a tool, however it is written, and leaves field names, events and code", async () => {
    expect(await operatorStep("Use slack_send_message, mcp__github__create_issue or get_weather.")).toBe(
      'Use tool_search for "slack send message", tool_search for "create issue" or tool_search for "get weather".',
    );
    const fields =
      "Page with next_cursor or next_page_token (page_size 100) until has_more is false; read max_tokens, " +
      "stop_reason and run_started; send grant_type=refresh_token; set lock_timeout; " +
      "call pd.read_excel('a.xlsx') with remove_duplicates=True; open read_write.";
    expect(await operatorStep(fields)).toBe(fields);
  });

  it("rewrites, in operator text, any name under a namespace of the caller's catalog, whatever its words", async () => {
    expect(
      await operatorStep(
        "Cross-check hr.secret_payroll, hr.log and mcp__hr__salary_bands, then fs.read_file.",
      ),
    ).toBe(
      'Cross-check tool_search for "secret payroll", tool_search for "log" and tool_search for "salary bands", then fs.read_file.',
    );
  });

  it("leaves files and names of unknown namespaces as written", async () => {
    const step = "Attach hr.md and hr.json; ask team.secret_payroll.";
    expect(await operatorStep(step)).toBe(step);
  });

  it("leaves text untouched without a gate", async () => {
    const { service } = loaded();
    expect((await service.getSkills(caller("t1"), { names: ["git.open_pr"] })).skills[0]?.trigger).toContain(
      "github.create_pull_request",
    );
  });
});
