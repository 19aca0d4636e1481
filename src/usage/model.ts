/**
 * The usage model: one model call's token counts, in wayfind's convention.
 *
 * wayfind follows Anthropic's convention: `inputTokens` is UNCACHED input only. Cache reads and cache
 * writes are separate, disjoint counts, so the prompt size is input + cacheRead + cacheCreation.
 *
 * How each provider's own usage maps (the `from*Usage` functions below do it for you):
 *
 * | wayfind                      | Anthropic                                   | OpenAI (Chat / Responses)                                   | Gemini                                   | Bedrock (Converse)     |
 * |------------------------------|---------------------------------------------|-------------------------------------------------------------|------------------------------------------|------------------------|
 * | inputTokens                  | input_tokens                                | prompt_tokens − prompt_tokens_details.cached_tokens (input_tokens − input_tokens_details.cached_tokens) | promptTokenCount − cachedContentTokenCount (+ toolUsePromptTokenCount) | inputTokens |
 * | outputTokens                 | output_tokens                               | completion_tokens (output_tokens); reasoning is included    | candidatesTokenCount + thoughtsTokenCount | outputTokens          |
 * | cacheReadInputTokens         | cache_read_input_tokens                     | prompt_tokens_details.cached_tokens                         | cachedContentTokenCount                  | cacheReadInputTokens   |
 * | cacheCreationInputTokens     | cache_creation_input_tokens                 | 0 (OpenAI does not bill cache writes)                       | 0 (implicit caching has no write charge) | cacheWriteInputTokens  |
 * | cacheCreation1hInputTokens   | cache_creation.ephemeral_1h_input_tokens    | —                                                           | —                                        | —                      |
 *
 * OpenAI's and Gemini's prompt counts INCLUDE the cached tokens, so pass input = prompt − cached; passing
 * the raw prompt count double-counts the cached part.
 */

export const PROVIDERS = ["anthropic", "openai", "gemini", "bedrock", "other"] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface TokenUsage {
  /** Uncached input tokens only. */
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadInputTokens: number;
  /** All cache-write tokens, whatever their TTL. */
  readonly cacheCreationInputTokens: number;
  /** The part of cacheCreationInputTokens written with the 1-hour TTL (Anthropic); the rest is 5-minute. */
  readonly cacheCreation1hInputTokens?: number;
}

/** Field cap: far above any real call (context windows are ≤ a few million), low enough to catch unit bugs. */
export const MAX_TOKENS_PER_FIELD = 10_000_000;

export interface AnthropicUsage {
  readonly input_tokens?: number;
  readonly output_tokens?: number;
  readonly cache_read_input_tokens?: number | null;
  readonly cache_creation_input_tokens?: number | null;
  readonly cache_creation?: {
    readonly ephemeral_5m_input_tokens?: number;
    readonly ephemeral_1h_input_tokens?: number;
  } | null;
}

export function fromAnthropicUsage(u: AnthropicUsage): TokenUsage {
  const split5m = u.cache_creation?.ephemeral_5m_input_tokens ?? 0;
  const split1h = u.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  return {
    inputTokens: u.input_tokens ?? 0,
    outputTokens: u.output_tokens ?? 0,
    cacheReadInputTokens: u.cache_read_input_tokens ?? 0,
    // Older responses have only the total; newer ones also split it by TTL.
    cacheCreationInputTokens: u.cache_creation_input_tokens ?? split5m + split1h,
    cacheCreation1hInputTokens: split1h,
  };
}

export interface OpenAIUsage {
  /** Chat Completions */
  readonly prompt_tokens?: number;
  readonly completion_tokens?: number;
  readonly prompt_tokens_details?: { readonly cached_tokens?: number } | null;
  /** Responses API */
  readonly input_tokens?: number;
  readonly output_tokens?: number;
  readonly input_tokens_details?: { readonly cached_tokens?: number } | null;
}

export function fromOpenAIUsage(u: OpenAIUsage): TokenUsage {
  const prompt = u.prompt_tokens ?? u.input_tokens ?? 0;
  const cached = u.prompt_tokens_details?.cached_tokens ?? u.input_tokens_details?.cached_tokens ?? 0;
  return {
    inputTokens: Math.max(0, prompt - cached),
    outputTokens: u.completion_tokens ?? u.output_tokens ?? 0,
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
  };
}

export interface GeminiUsage {
  readonly promptTokenCount?: number;
  readonly cachedContentTokenCount?: number;
  readonly candidatesTokenCount?: number;
  readonly thoughtsTokenCount?: number;
  readonly toolUsePromptTokenCount?: number;
}

export function fromGeminiUsage(u: GeminiUsage): TokenUsage {
  const cached = u.cachedContentTokenCount ?? 0;
  return {
    inputTokens: Math.max(0, (u.promptTokenCount ?? 0) - cached) + (u.toolUsePromptTokenCount ?? 0),
    // Thinking tokens are billed at the output price.
    outputTokens: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0),
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
  };
}

export interface BedrockUsage {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly cacheReadInputTokens?: number;
  readonly cacheWriteInputTokens?: number;
}

export function fromBedrockUsage(u: BedrockUsage): TokenUsage {
  return {
    inputTokens: u.inputTokens ?? 0,
    outputTokens: u.outputTokens ?? 0,
    cacheReadInputTokens: u.cacheReadInputTokens ?? 0,
    cacheCreationInputTokens: u.cacheWriteInputTokens ?? 0,
  };
}

/**
 * Input tokens that count against the provider's input-tokens-per-minute limit. Anthropic excludes cache
 * reads from ITPM (current models); OpenAI, Gemini and — conservatively — Bedrock and others count them.
 */
export function rateLimitInputTokens(provider: Provider, usage: TokenUsage): number {
  const uncachedAndWrites = usage.inputTokens + usage.cacheCreationInputTokens;
  return provider === "anthropic" ? uncachedAndWrites : uncachedAndWrites + usage.cacheReadInputTokens;
}
