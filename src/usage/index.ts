export {
  type RecordUsageInput,
  type RecordUsageResult,
  USAGE_GROUP_BY,
  type UsageGroup,
  type UsageGroupBy,
  UsageLedger,
  type UsageLedgerOptions,
  type UsageSummary,
  type UsageSummaryFilter,
  type UsageTotals,
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
