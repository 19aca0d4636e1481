import type { WayfindConfig } from "../config/index.ts";
import { parseCatalogFile, type ToolInput } from "../discovery/index.ts";
import { type PayloadProvider, type SchemaBudgetReport, schemaBudgetReport } from "../payload/index.ts";
import { applySourceOptions } from "./catalog-files.ts";

export interface CatalogStatsOptions {
  readonly provider: PayloadProvider;
  /** A tool whose rendered schema is larger than this is flagged. */
  readonly perToolCeilingTokens: number;
  /** What all tools together may cost when rendered every turn. */
  readonly totalBudgetTokens: number;
}

/**
 * The schema budget of the configured catalog files, measured the way the provider payload renders
 * them — so catalog authors see bloat before their users pay for it (`wayfind catalog stats`).
 */
export function catalogStats(config: WayfindConfig, options: CatalogStatsOptions): SchemaBudgetReport {
  const tools: ToolInput[] = config.catalogs.flatMap((catalog) =>
    applySourceOptions(
      parseCatalogFile(catalog.path, { namespace: catalog.namespace, loadingMode: catalog.loadingMode })
        .tools,
      catalog,
      catalog.namespace,
    ),
  );
  return schemaBudgetReport(
    tools.map((tool) => ({
      name:
        tool.namespace && !tool.name.startsWith(`${tool.namespace}.`)
          ? `${tool.namespace}.${tool.name}`
          : tool.name,
      description: tool.description ?? "",
      inputSchema: tool.argsSchema ?? { type: "object" },
      deferred: tool.loadingMode !== "always",
    })),
    options,
  );
}

/** A plain-text table: the largest tools first, then the totals. */
export function formatCatalogStats(
  report: SchemaBudgetReport,
  options: CatalogStatsOptions,
  top = 20,
): string {
  const largest = [...report.tools]
    .sort((a, b) => b.tokens - a.tokens || (a.name < b.name ? -1 : 1))
    .slice(0, top);
  const width = Math.max(4, ...largest.map((line) => line.name.length));
  const rows = largest.map(
    (line) =>
      `${line.name.padEnd(width)}  ${String(line.tokens).padStart(7)}  ${String(line.chars).padStart(8)}${line.overCeiling ? "  over ceiling" : ""}`,
  );
  return [
    `schema budget (${options.provider} rendering, ~tokens)`,
    `${"tool".padEnd(width)}  ${"tokens".padStart(7)}  ${"chars".padStart(8)}`,
    ...rows,
    report.tools.length > top ? `... ${report.tools.length - top} more tools` : "",
    "",
    `tools: ${report.tools.length}   over ${options.perToolCeilingTokens}-token ceiling: ${report.overCeiling.length}`,
    `total: ${report.totalTokens} of ${report.totalBudgetTokens} budgeted tokens (${report.overBudget ? `${-report.remainingTokens} over` : `${report.remainingTokens} left`})`,
    "",
  ]
    .filter((line, i, lines) => line !== "" || lines[i - 1] !== "")
    .join("\n");
}
