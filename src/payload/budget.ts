import { invalidArgument } from "../errors.ts";
import { estimateTokens } from "../text/tokens.ts";
import { type PayloadProvider, type PayloadTool, renderToolPayload } from "./tool-payload.ts";

export interface SchemaBudgetOptions {
  readonly perToolCeilingTokens: number;
  readonly totalBudgetTokens: number;
  /** Whose rendering to measure; default anthropic. */
  readonly provider?: PayloadProvider;
}

interface ToolBudgetLine {
  readonly name: string;
  /** Characters of the tool's canonical rendered JSON (as sent, cache marker excluded). */
  readonly chars: number;
  readonly tokens: number;
  readonly overCeiling: boolean;
}

export interface SchemaBudgetReport {
  readonly tools: readonly ToolBudgetLine[];
  /** Names of tools over `perToolCeilingTokens`, largest first. */
  readonly overCeiling: readonly string[];
  /** Estimate for the whole rendered payload (tools plus the list's brackets and commas). */
  readonly totalTokens: number;
  readonly totalBudgetTokens: number;
  readonly overBudget: boolean;
  /** totalBudgetTokens − totalTokens; negative when over. */
  readonly remainingTokens: number;
}

/** Per-tool and total rendered size against a per-tool ceiling and a total budget (estimateTokens). */
export function schemaBudgetReport(
  tools: readonly PayloadTool[],
  options: SchemaBudgetOptions,
): SchemaBudgetReport {
  for (const key of ["perToolCeilingTokens", "totalBudgetTokens"] as const) {
    const value = options[key];
    if (!Number.isInteger(value) || value < 0) throw invalidArgument(`${key} must be a non-negative integer`);
  }
  const provider = options.provider ?? "anthropic";
  // Measured as deferred=true so no tool carries the cache marker: the report is about schema size.
  const lines = tools.map((tool): ToolBudgetLine => {
    const json = renderToolPayload({ provider, tools: [{ ...tool, deferred: true }] }).payloadJson;
    const body =
      provider === "gemini" ? json.slice('{"functionDeclarations":['.length, -2) : json.slice(1, -1);
    const tokens = estimateTokens(body);
    return {
      name: tool.name,
      chars: body.length,
      tokens,
      overCeiling: tokens > options.perToolCeilingTokens,
    };
  });
  const totalTokens = estimateTokens(renderToolPayload({ provider, tools }).payloadJson);
  return {
    tools: lines,
    overCeiling: lines
      .filter((l) => l.overCeiling)
      .sort((a, b) => b.tokens - a.tokens || (a.name < b.name ? -1 : 1))
      .map((l) => l.name),
    totalTokens,
    totalBudgetTokens: options.totalBudgetTokens,
    overBudget: totalTokens > options.totalBudgetTokens,
    remainingTokens: options.totalBudgetTokens - totalTokens,
  };
}
