import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { expectNoStall } from "../support/health.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * Skills share the tools' search engine (issue 43), whose word index is seconds of work over a large
 * library: after the skills change, the first search builds it in slices between other calls and
 * waits for it, so it finds what was just loaded and a health check keeps answering meanwhile.
 */

const SKILLS = 20_000;
const PER_FILE = 2_000;
const AREAS = ["billing", "deploy", "search", "storage", "mail", "auth", "cache", "queue"];

let wayfind: TestServer;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "wayfind-skill-index-"));
  mkdirSync(join(dir, "many"));
  const skill = (i: number) =>
    JSON.stringify({
      name: `many.${AREAS[i % AREAS.length]}_${i}`,
      title: `${AREAS[i % AREAS.length]} procedure ${i}`,
      trigger: `when the ${AREAS[(i * 7) % AREAS.length]} service needs step ${i % 97}`,
      description: `Handles ${AREAS[(i * 3) % AREAS.length]} work number ${i} with care`,
      steps: ["check", "act"],
    });
  // Files under the pack's per-file limit.
  for (let file = 0; file < SKILLS / PER_FILE; file++)
    writeFileSync(
      join(dir, "many", `part-${file}.skill.jsonl`),
      Array.from({ length: PER_FILE }, (_, i) => skill(file * PER_FILE + i)).join("\n"),
    );
  wayfind = await startTestServer({ skill_packs: [{ name: "many", path: "many" }] }, { dataDir: dir });
}, 120_000);
afterAll(async () => {
  await wayfind.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("the skills' word index over a large library", () => {
  it("is built between other calls by the first search, which finds the loaded skills", async () => {
    await expectNoStall(wayfind, async () => {
      const found = await wayfind
        .grpc(SkillService)
        .searchSkills({ caller: { tenantId: "acme" }, query: "many.deploy_12345", limit: 3 });
      expect(found.skills[0]?.name).toBe("many.deploy_12345");
    });
  }, 60_000);
});
