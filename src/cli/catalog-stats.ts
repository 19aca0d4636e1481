import { parseArgs } from "node:util";
import type { WayfindConfig } from "../config/index.ts";
import { invalidArgument } from "../errors.ts";
import type { PayloadProvider } from "../payload/index.ts";
import { catalogStats, formatCatalogStats } from "../sources/catalog-stats.ts";

const PROVIDERS: readonly PayloadProvider[] = ["anthropic", "openai", "gemini"];

/** `wayfind catalog stats`: the schema budget of the configured catalogs, without a server. */
export function runCatalogStats(args: string[], loadConfig: (file?: string) => WayfindConfig): number {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: "string" },
      provider: { type: "string", default: "anthropic" },
      ceiling: { type: "string", default: "800" },
      budget: { type: "string", default: "20000" },
      top: { type: "string", default: "20" },
    },
    strict: true,
  });
  const provider = values.provider as PayloadProvider;
  if (!PROVIDERS.includes(provider))
    throw invalidArgument(`--provider must be one of ${PROVIDERS.join(", ")}`);
  const options = {
    provider,
    perToolCeilingTokens: positiveInteger("--ceiling", values.ceiling),
    totalBudgetTokens: positiveInteger("--budget", values.budget),
  };
  const report = catalogStats(loadConfig(values.config), options);
  process.stdout.write(formatCatalogStats(report, options, positiveInteger("--top", values.top)));
  return report.overCeiling.length > 0 || report.overBudget ? 1 : 0;
}

function positiveInteger(flag: string, value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0)
    throw invalidArgument(`${flag} must be a positive integer, got "${value}"`);
  return number;
}
