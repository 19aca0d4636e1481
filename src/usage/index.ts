export { localUsageBook, type UsageBook, UsageLedger } from "./ledger.ts";
export {
  fromAnthropicUsage,
  fromBedrockUsage,
  fromGeminiUsage,
  fromOpenAIUsage,
  type Provider,
  rateLimitInputTokens,
} from "./model.ts";
export { maintainPartitions, startPartitionMaintenance } from "./partitions.ts";
export { PostgresLedger } from "./postgres-ledger.ts";
export { PricingTable } from "./pricing.ts";
export { startUsageRetention } from "./retention.ts";
export { usageMigrations } from "./schema.ts";
export {
  USAGE_GROUP_BY,
  type UsageGroupBy,
  type UsageSummary,
  type UsageSummaryFilter,
  type UsageTotals,
} from "./summary.ts";
