import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SemanticStatus } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillScope, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { MODEL_DIR } from "./model-dir.ts";

const acme = { tenantId: "acme", projectId: "web" };
const globex = { tenantId: "globex", projectId: "web" };

function skill(name: string, title: string, trigger: string): { path: string; content: string } {
  return {
    path: `${name}.skill.md`,
    content: `---\nname: ${name}\ntitle: ${title}\ntrigger: ${trigger}\ntask_type: domain\nsteps:\n  - Do it.\n---\n`,
  };
}

const ACME_SKILLS = [
  skill(
    "acme.forecast",
    "Check the weather forecast",
    "Someone plans an outdoor activity and wants rain and wind odds.",
  ),
  skill("acme.refund", "Refund an order", "A customer asks for their money back."),
  skill("acme.deploy", "Deploy the storefront", "A release must go to production."),
];
const GLOBEX_SKILLS = [skill("globex.umbrella", "Umbrella policy", "Umbrella and rain gear for the office.")];
const PARAPHRASE = "do I need an umbrella in Oslo this weekend?";

describe("semantic skill search over gRPC (the shipped all-MiniLM-L6-v2 model)", () => {
  let wayfind: TestServer;
  const client = () => wayfind.grpc(SkillService);

  /** Searches until every skill the caller sees has its vector (semantic_status READY). */
  async function searchWhenReady(caller: typeof acme, query: string) {
    for (let attempt = 0; attempt < 300; attempt++) {
      const response = await client().searchSkills({ caller, query });
      if (response.semanticStatus === SemanticStatus.READY) return response;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("skill vectors never became ready");
  }

  beforeAll(async () => {
    // These tests are about meaning, not about waiting for it: every query waits for its vector.
    wayfind = await startTestServer({
      tool_search: { semantic: { model_dir: MODEL_DIR, max_wait_ms: 60_000 } },
    });
    for (const [caller, packName, files] of [
      [acme, "acme-skills", ACME_SKILLS],
      [globex, "globex-skills", GLOBEX_SKILLS],
    ] as const)
      await client().loadSkillPack({
        caller,
        packName,
        scope: SkillScope.TENANT,
        source: { case: "files", value: { files: [...files] } },
      });
  }, 60_000);
  afterAll(() => wayfind?.stop());

  it("finds by meaning a skill that shares no word with the request, and says so", async () => {
    const response = await searchWhenReady(acme, PARAPHRASE);
    const top = response.skills[0];
    expect(top?.name).toBe("acme.forecast");
    // The words barely match (a prefix at most); the meaning carries it.
    expect(top?.semanticScore).toBeGreaterThan(3 * (top?.lexicalScore ?? 1));
    expect(response.semanticPending).toBe(0);
  });

  it("never returns or counts another tenant's skill, however close in meaning", async () => {
    const response = await searchWhenReady(acme, PARAPHRASE);
    expect(response.skills.map((s) => s.name)).not.toContain("globex.umbrella");
    const theirs = await searchWhenReady(globex, PARAPHRASE);
    expect(theirs.skills[0]?.name).toBe("globex.umbrella");
  });

  it("injects the skill a paraphrased task needs before the agent starts", async () => {
    await searchWhenReady(acme, PARAPHRASE);
    const response = await client().getRelevantSkills({ caller: acme, task: PARAPHRASE, topK: 1 });
    expect(response.skillNames).toEqual(["acme.forecast"]);
    expect(response.formattedContext).toContain("Check the weather forecast");
  });
});
