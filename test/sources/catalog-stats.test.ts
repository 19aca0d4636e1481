import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.ts";
import { catalogStats, formatCatalogStats } from "../../src/sources/catalog-stats.ts";

function configWith(tools: object[]) {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-stats-"));
  writeFileSync(join(dir, "tools.jsonl"), tools.map((tool) => JSON.stringify(tool)).join("\n"));
  writeFileSync(join(dir, "wayfind.yaml"), "catalogs:\n  - {path: tools.jsonl, namespace: ns}\n");
  return loadConfig(join(dir, "wayfind.yaml"), {});
}

const bloated = {
  name: "bloated",
  description: "Does everything. ".repeat(60),
  parameters: { type: "object", properties: { q: { type: "string", description: "x ".repeat(200) } } },
};
const lean = { name: "lean", description: "Does one thing.", parameters: { type: "object" } };
const options = { provider: "anthropic" as const, perToolCeilingTokens: 200, totalBudgetTokens: 300 };

describe("catalog stats", () => {
  it("flags a tool whose rendered schema is over the ceiling", () => {
    const report = catalogStats(configWith([bloated, lean]), options);
    expect(report.overCeiling).toEqual(["ns.bloated"]);
    expect(report.tools.find((line) => line.name === "ns.lean")?.overCeiling).toBe(false);
  });

  it("reports the total against the budget", () => {
    const report = catalogStats(configWith([bloated, lean]), options);
    expect(report.overBudget).toBe(true);
    expect(formatCatalogStats(report, options)).toMatch(/total: \d+ of 300 budgeted tokens \(\d+ over\)/);
  });
});
