import { describe, expect, it } from "vitest";
import { schemaBudgetReport } from "../../src/payload/index.ts";
import { estimateTokens } from "../../src/text/tokens.ts";
import { catalogTools, tool } from "./catalog.ts";

describe("schemaBudgetReport", () => {
  it("measures each tool's rendered size in chars and estimated tokens", () => {
    const report = schemaBudgetReport([tool("a")], { perToolCeilingTokens: 1000, totalBudgetTokens: 1000 });
    const rendered = '{"description":"Does a","input_schema":{"properties":{},"type":"object"},"name":"a"}';
    expect(report.tools).toEqual([
      { name: "a", chars: rendered.length, tokens: estimateTokens(rendered), overCeiling: false },
    ]);
  });

  it("lists tools over the per-tool ceiling, largest first", () => {
    const big = tool("big", false, {
      type: "object",
      properties: { p: { type: "string", description: "word ".repeat(200) } },
    });
    const bigger = tool("bigger", false, {
      type: "object",
      properties: { p: { type: "string", description: "word ".repeat(400) } },
    });
    const report = schemaBudgetReport([tool("small"), big, bigger], {
      perToolCeilingTokens: 100,
      totalBudgetTokens: 10_000,
    });
    expect(report.overCeiling).toEqual(["bigger", "big"]);
  });

  it("compares the whole payload against the total budget", () => {
    const report = schemaBudgetReport(catalogTools(), {
      perToolCeilingTokens: 2000,
      totalBudgetTokens: 20_000,
    });
    expect(report.tools).toHaveLength(309);
    expect(report.overBudget).toBe(true);
    expect(report.remainingTokens).toBe(20_000 - report.totalTokens);
  });

  it("rejects a negative budget", () => {
    expect(() => schemaBudgetReport([], { perToolCeilingTokens: -1, totalBudgetTokens: 0 })).toThrow(
      /perToolCeilingTokens/,
    );
  });
});
