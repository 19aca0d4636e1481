import type { WayfindConfig } from "../config/index.ts";
import { invalidArgument } from "../errors.ts";
import type { PayloadProvider } from "../payload/index.ts";
import { catalogStats, formatCatalogStats } from "../sources/catalog-stats.ts";
import { commandArgs } from "./args.ts";

const PROVIDERS: readonly PayloadProvider[] = ["anthropic", "openai", "gemini"];

const USAGE = `Usage: wayfind catalog stats [--config FILE] [--provider P] [--ceiling N] [--budget N] [--top N]

The rendered size of every configured tool, against a per-tool ceiling and a total budget; exits 1
when a tool is over the ceiling or all of them over the budget. Needs no running server.

Options:
  --config FILE    YAML configuration (default demo/wayfind.yaml)
  --provider P     whose tool format to measure: anthropic, openai or gemini (default anthropic)
  --ceiling N      flag tools over N tokens (default 800)
  --budget N       total token budget of all tools (default 20000)
  --top N          list the N largest tools (default 20)
  -h, --help       this help
`;

/** `wayfind catalog stats`: the schema budget of the configured catalogs, without a server. */
export function runCatalogStats(args: string[], loadConfig: (file?: string) => WayfindConfig): number {
  const values = commandArgs("catalog stats", USAGE, args, {
    config: { type: "string" },
    provider: { type: "string", default: "anthropic" },
    ceiling: { type: "string", default: "800" },
    budget: { type: "string", default: "20000" },
    top: { type: "string", default: "20" },
  });
  if (!values) return 0;
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
