import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SearchType } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillFormat, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { expectNoStall } from "../support/health.ts";
import { failure } from "../support/rpc.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * Issue 42: skill text and regexes a caller crafts never hold the event loop. GetRelevantSkills and
 * GetSkills over ten skills of about a megabyte each (every field and list item at its limit, full
 * of what redaction rewrites) held it for seconds; a SearchSkills regex too broad to run was refused
 * only after hundreds of milliseconds of RE2. A health check, answered by the same loop, keeps
 * answering within the budget.
 */

const BIG_SKILLS = 10;
/** A list item at its limit (4,000 characters) of e-mail addresses: the slowest text to redact. */
const ITEM = "mail a.b@c.de or x@y.io now ".repeat(139);
const acme = { tenantId: "acme", projectId: "web", sessionId: "s1", runId: "r1" };

let wayfind: TestServer;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "wayfind-skill-stall-"));
  mkdirSync(join(dir, "big"));
  for (let i = 0; i < BIG_SKILLS; i++) {
    const many = Array.from({ length: 80 }, () => ITEM);
    const skill = {
      name: `big.procedure_${i}`,
      title: "big crafted procedure",
      trigger: "when handling a big crafted procedure",
      description: ITEM,
      steps: many,
      preconditions: many,
      failure_modes: many,
    };
    writeFileSync(join(dir, "big", `s${i}.skill.json`), JSON.stringify(skill));
  }
  // 500 skills of ~1.2 KB: a regex without literals would run RE2 over more text than one search may.
  mkdirSync(join(dir, "mid"));
  writeFileSync(
    join(dir, "mid", "mid.skill.jsonl"),
    Array.from({ length: 500 }, (_, i) =>
      JSON.stringify({
        name: `mid.skill_${i}`,
        trigger: `mid ${i}`,
        description: "ab ".repeat(400),
        steps: ["go"],
      }),
    ).join("\n"),
  );
  wayfind = await startTestServer(
    {
      skill_packs: [
        { name: "big", path: "big" },
        { name: "mid", path: "mid" },
      ],
    },
    { dataDir: dir },
  );
}, 60_000);
afterAll(async () => {
  await wayfind.stop();
  rmSync(dir, { recursive: true, force: true });
});

const skills = () => wayfind.grpc(SkillService);
const names = Array.from({ length: BIG_SKILLS }, (_, i) => `big.procedure_${i}`);

describe("skill text built to be expensive (issue 42: GetRelevantSkills held the loop 298–535 ms)", () => {
  it("injects the ten most relevant megabyte skills within the budget, the loop answering", async () => {
    await expectNoStall(wayfind, async () => {
      const relevant = await skills().getRelevantSkills({
        caller: acme,
        task: "big crafted procedure",
        topK: 10,
        maxTokens: 6000,
      });
      expect(relevant.skillNames.length).toBeGreaterThan(0);
      expect(relevant.tokenEstimate).toBeLessThanOrEqual(6000);
      expect(relevant.formattedContext).toContain("[REDACTED_EMAIL]");
      expect(relevant.formattedContext).not.toContain("a.b@c.de");
    });
  }, 60_000);

  it("returns megabyte skills whole, redacted, the loop answering meanwhile", async () => {
    // Four: encoding the answer (~1 MB a skill) is work of the transport's that no slicing spreads.
    await expectNoStall(wayfind, async () => {
      const got = await skills().getSkills(
        { caller: acme, names: names.slice(0, 4), format: SkillFormat.INJECTION, maxTokens: 6000 },
        { timeoutMs: 60_000 },
      );
      expect(got.skills).toHaveLength(4);
      expect(got.skills[0]?.steps).toHaveLength(80);
      expect(got.skills.flatMap((skill) => [...skill.steps, ...skill.preconditions]).join("")).not.toContain(
        "a.b@c.de",
      );
      expect(got.tokenEstimate).toBeLessThanOrEqual(6000);
    });
  }, 60_000);
});

describe("regexes too broad to run (issue 42: refused only after 264–562 ms of RE2)", () => {
  it("refuses them once they would run RE2 past the bound, the loop answering", async () => {
    await expectNoStall(wayfind, async () => {
      for (const query of ["[a-z]+q", "(x+x+)+y", "[^x]{20}z", "\\w+\\s+\\w+!"]) {
        const error = await failure(
          skills().searchSkills({ caller: acme, query, searchType: SearchType.REGEX }),
        );
        expect(error.rawMessage).toContain("matches too broadly");
      }
    });
  });
});
