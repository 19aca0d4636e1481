import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/ts/google/rpc/error_details_pb.ts";
import { MatchQuality, MatchType, SearchType, SemanticStatus } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillFormat, SkillScope, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";
import { yamlAliasBomb } from "../support/yaml-bomb.ts";

let wayfind: RouterTestServer;
beforeAll(async () => {
  wayfind = await startRouterServer();
});
afterAll(() => wayfind.stop());

const acme = { tenantId: "acme", projectId: "web", sessionId: "s1", runId: "r1" };
const globex = { tenantId: "globex", projectId: "web", sessionId: "s2", runId: "r2" };

const deploySkill = `---
name: acme.deploy
title: Deploy the storefront
trigger: A release of the storefront must go to production.
task_type: code
steps:
  - Ask ops@acme.example or call +1 415 555 0100 before deploying.
  - Run the deploy with Authorization Bearer sk-live-51HxQpQ2eZvKYlo2C0abcdef and watch https://deploy.acme.example/status?token=s3cr3t
---
`;

async function loadAcmePack() {
  return wayfind.grpc(SkillService).loadSkillPack({
    caller: acme,
    packName: "acme-ops",
    scope: SkillScope.TENANT,
    source: { case: "files", value: { files: [{ path: "deploy.skill.md", content: deploySkill }] } },
  });
}

describe("SkillService", () => {
  it("loads an inline pack and reports an unchanged reload as a no-op", async () => {
    expect(await loadAcmePack()).toMatchObject({ loaded: 1, skillCount: 1 });
    expect(await loadAcmePack()).toMatchObject({ loaded: 0, updated: 0, unchanged: 1 });
  });

  it("rejects an invalid pack listing every problem, and keeps nothing of it", async () => {
    const error = await failure(
      wayfind.grpc(SkillService).loadSkillPack({
        caller: acme,
        packName: "broken",
        scope: SkillScope.TENANT,
        source: {
          case: "files",
          value: {
            files: [
              { path: "a.skill.md", content: "---\nname: a\ntrigger: [unclosed\n---\n" },
              { path: "b.skill.json", content: '{"name": "b", "trigger": "x", "steps": []}' },
              { path: "c.skill.md", content: "---\nname: c\ntrigger: fine\nsteps: [ok]\n---\n" },
            ],
          },
        },
      }),
    );
    expect(error).toMatchObject({ code: Code.InvalidArgument });
    // The message names the first problem; the details list every one.
    expect(error.message).toContain("a.skill.md");
    const problems = error.findDetails(BadRequestSchema)[0]?.fieldViolations ?? [];
    const descriptions = problems.map((problem) => problem.description).join("\n");
    expect(descriptions).toContain("a.skill.md");
    expect(descriptions).toContain("b.skill.json");
    const listed = await wayfind.grpc(SkillService).listSkills({ caller: acme });
    expect(listed.skills.map((skill) => skill.name)).not.toContain("c");
  });

  it("rejects a YAML alias bomb with INVALID_ARGUMENT naming the file", async () => {
    const error = await failure(
      wayfind.grpc(SkillService).loadSkillPack({
        caller: acme,
        packName: "laughs",
        scope: SkillScope.TENANT,
        source: {
          case: "files",
          value: { files: [{ path: "laughs.skill.yaml", content: yamlAliasBomb("name: laughs\n") }] },
        },
      }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("laughs.skill.yaml");
    expect(error.rawMessage).toContain("aliases expand to more than 100 nodes");
  });

  it("redacts e-mails, phone numbers, tokens and URL query strings from returned skills", async () => {
    await loadAcmePack();
    const { skills, formattedContext } = await wayfind
      .grpc(SkillService)
      .getSkills({ caller: acme, names: ["acme.deploy"], format: SkillFormat.INJECTION });
    const text = `${skills[0]?.steps.join("\n")}\n${formattedContext}`;
    expect(text).toContain("[REDACTED_EMAIL]");
    expect(text).toContain("[REDACTED_PHONE]");
    expect(text).toContain("[REDACTED_TOKEN]");
    expect(text).not.toMatch(/ops@acme|555 0100|sk-live|s3cr3t/);
  });

  it("hides one tenant's skills from another, exactly like a missing skill", async () => {
    await loadAcmePack();
    const client = wayfind.grpc(SkillService);
    const other = await failure(client.getSkills({ caller: globex, names: ["acme.deploy"] }));
    const missing = await failure(client.getSkills({ caller: globex, names: ["no.such.skill"] }));
    expect(other).toMatchObject({ code: Code.NotFound });
    expect(missing).toMatchObject({ code: Code.NotFound });
    expect(other.message.replace("acme.deploy", "NAME")).toBe(
      missing.message.replace("no.such.skill", "NAME"),
    );
    const search = await client.searchSkills({ caller: globex, query: "deploy storefront" });
    expect(search.skills.map((skill) => skill.name)).not.toContain("acme.deploy");
  });

  it("reports match quality and each hit's lexical part, and drops hits below min_score", async () => {
    await loadAcmePack();
    const client = wayfind.grpc(SkillService);
    const found = await client.searchSkills({ caller: acme, query: "deploy storefront" });
    expect(found.skills.length).toBeGreaterThan(0);
    for (const hit of found.skills) expect(hit.lexicalScore).toBe(hit.score);
    expect(found.semanticStatus).toBe(SemanticStatus.OFF);
    const none = await client.searchSkills({ caller: acme, query: "zzqxv" });
    expect(none.matchQuality).toBe(MatchQuality.NONE);
    const strict = await client.searchSkills({ caller: acme, query: "deploy storefront", minScore: 1 });
    expect(strict.skills.every((hit) => hit.score >= 1)).toBe(true);
    await expect(client.searchSkills({ caller: acme, query: "deploy", minScore: 2 })).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
  });

  it("answers as SearchTools does: match types by where a pattern matched, FUZZY when widened to it", async () => {
    await loadAcmePack();
    const client = wayfind.grpc(SkillService);
    const regex = await client.searchSkills({
      caller: acme,
      query: "^acme\\.deploy$",
      searchType: SearchType.REGEX,
    });
    expect(regex.skills.map((hit) => [hit.name, hit.matchType])).toEqual([["acme.deploy", MatchType.NAME]]);
    expect(regex.effectiveSearchType).toBe(SearchType.REGEX);
    const fuzzy = await client.searchSkills({ caller: acme, query: "storefrnt" });
    expect(fuzzy.effectiveSearchType).toBe(SearchType.FUZZY);
    expect(fuzzy.skills[0]?.matchType).toBe(MatchType.FUZZY);
  });

  it("never returns injected context over the token budget", async () => {
    const response = await wayfind.grpc(SkillService).getRelevantSkills({
      caller: acme,
      task: "deploy the storefront release to production",
      topK: 5,
      maxTokens: 200,
    });
    expect(response.tokenEstimate).toBeLessThanOrEqual(200);
    expect(response.skillNames.length).toBeGreaterThan(0);
  });

  it("rejects a budget outside 200–6000 with INVALID_ARGUMENT", async () => {
    await expect(
      wayfind.grpc(SkillService).getSkills({ caller: acme, names: ["acme.deploy"], maxTokens: 50 }),
    ).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it("needs a tenant to load a tenant-scoped pack", async () => {
    await expect(
      wayfind.grpc(SkillService).loadSkillPack({
        caller: {},
        packName: "x",
        scope: SkillScope.TENANT,
        source: { case: "files", value: { files: [] } },
      }),
    ).rejects.toMatchObject({ code: Code.FailedPrecondition });
  });
});
