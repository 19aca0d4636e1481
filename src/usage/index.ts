export {
  type RecordUsageInput,
  type RecordUsageResult,
  UsageLedger,
  type UsageLedgerOptions,
} from "./ledger.ts";
export {
  type AnthropicUsage,
  type BedrockUsage,
  fromAnthropicUsage,
  fromBedrockUsage,
  fromGeminiUsage,
  fromOpenAIUsage,
  type GeminiUsage,
  type OpenAIUsage,
  type Provider,
  rateLimitInputTokens,
  type TokenUsage,
} from "./model.ts";
export {
  type CallCost,
  type ModelPrice,
  PricingTable,
} from "./pricing.ts";
export { startUsageRetention, type UsageRetentionOptions } from "./retention.ts";
export { usageMigrations } from "./schema.ts";
export {
  USAGE_GROUP_BY,
  type UsageGroup,
  type UsageGroupBy,
  type UsageSummary,
  type UsageSummaryFilter,
  type UsageTotals,
} from "./summary.ts";
