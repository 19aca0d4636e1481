// training/check_exclusions.py keeps held-out material out of the training pairs: BFCL, the MCP catalogs
// and the odd halves of the public sets (by tool names and request text, not by file name), and
// sources without a licence they can name.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const CHECK = join(ROOT, "training/check_exclusions.py");
const work = mkdtempSync(join(tmpdir(), "wayfind-exclusions-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function check(...args: string[]) {
  const run = spawnSync("python3", [CHECK, ...args], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

function pairsFile(rows: object[]): string {
  const file = join(work, `pairs-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(file, rows.map((row) => JSON.stringify(row)).join("\n"));
  return file;
}

const clean = {
  request: "which of my houseplants want water this week, judging by how humid it will be",
  tool: {
    name: "plant_care_schedule",
    description: "Plans watering of indoor plants from species and local humidity.",
  },
  source: "complexfuncbench",
  id: "test-1",
};

describe("training/check_exclusions.py", () => {
  it("catches one planted offender of every kind beside a sample of the shipped pairs", {
    timeout: 120_000,
  }, () => {
    const { status, out } = check("--self-test", "--sample", "200");
    expect(out).not.toContain("MISSED");
    for (const kind of [
      "mcp-name",
      "mcp-description",
      "held-out-request",
      "source-refused",
      "source-unlicensed",
    ])
      expect(out).toContain(`self-test caught: ${kind}`);
    expect(status).toBe(0);
  });

  it("fails loudly on held-out material, naming each offending line and only those", {
    timeout: 120_000,
  }, () => {
    const renamedMcpTool = {
      ...clean,
      tool: { name: "GitHub.Create-Or-Update-File", description: "writes things" },
    };
    const unlisted = { ...clean, source: "scraped-from-somewhere" };
    // BFCL's first simple_python question, reworded, and its function: found through the fingerprint.
    const bfclQuestion = {
      ...clean,
      request: "Please find the area of a triangle with a base of 10 units and height of 5 units!",
    };
    const bfclFunction = {
      ...clean,
      tool: {
        name: "calculate_triangle_area",
        description: "Calculate the area of a triangle given its base and height.",
      },
    };
    const { status, out } = check(pairsFile([clean, renamedMcpTool, unlisted, bfclQuestion, bfclFunction]));
    expect(status).toBe(1);
    expect(out).toMatch(/mcp-name: 1\n\s+line 2 /);
    expect(out).toMatch(/source-not-listed: 1\n\s+line 3 /);
    expect(out).toMatch(/bfcl-request: 1\n\s+line 4 /);
    expect(out).toMatch(/bfcl-tool: 1\n\s+line 5 /);
    expect(out).not.toMatch(/line 1 /);
  });
});
