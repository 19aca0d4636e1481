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
  MAX_TOKENS_PER_FIELD,
  type OpenAIUsage,
  PROVIDERS,
  type Provider,
  rateLimitInputTokens,
  type TokenUsage,
} from "./model.ts";
export {
  type CallCost,
  DEFAULT_PRICES,
  type ModelPrice,
  PricingTable,
} from "./pricing.ts";
export { startUsageRetention, type UsageRetentionOptions } from "./retention.ts";
export { usageMigrations } from "./schema.ts";
