import type { Provider, TokenUsage } from "./model.ts";

/** USD per million tokens. An absent cache price means "not known": a call that uses it gets an unknown cost. */
export interface ModelPrice {
  readonly provider: Provider;
  /** Exact model id, or a prefix of dated / suffixed ids (see PricingTable.find). */
  readonly model: string;
  readonly input: number;
  readonly output: number;
  /** 5-minute cache write (Anthropic 1.25× input). For OpenAI/Gemini a "write" is plain input. */
  readonly cacheWrite?: number;
  /** 1-hour cache write (Anthropic 2× input). */
  readonly cacheWrite1h?: number;
  readonly cacheRead?: number;
}

// Rounded so 3 × 0.1 is 0.3, not 0.30000000000000004.
const times = (price: number, factor: number) => Math.round(price * factor * 1e6) / 1e6;
const anthropic = (model: string, input: number, output: number): ModelPrice => ({
  provider: "anthropic",
  model,
  input,
  output,
  cacheWrite: times(input, 1.25),
  cacheWrite1h: times(input, 2),
  cacheRead: times(input, 0.1),
});
const bedrockClaude = (model: string, input: number, output: number): ModelPrice => ({
  ...anthropic(model, input, output),
  provider: "bedrock",
  cacheWrite1h: undefined,
});
// OpenAI and Gemini implicit caching charge nothing extra to write, so a reported write is billed as input.
const flat = (
  provider: Provider,
  model: string,
  input: number,
  output: number,
  cacheRead?: number,
): ModelPrice => ({
  provider,
  model,
  input,
  output,
  cacheWrite: input,
  cacheRead,
});

/**
 * Default list prices, USD per million tokens, standard tier, as published by each provider and last
 * checked 2025-11 (claude-opus-4-6 and gpt-5.2 added 2026-02). Not modelled: long-context tiers (Claude
 * Sonnet >200k-token prompts, Gemini 2.5 Pro >200k), batch / flex / priority tiers, Gemini explicit-cache
 * storage per hour, Bedrock regional-endpoint surcharges. Override any of them with `pricing:` config.
 */
const DEFAULT_PRICES: readonly ModelPrice[] = [
  anthropic("claude-opus-4-6", 5, 25),
  anthropic("claude-opus-4-5", 5, 25),
  anthropic("claude-opus-4-1", 15, 75),
  anthropic("claude-opus-4-0", 15, 75),
  anthropic("claude-opus-4-20250514", 15, 75),
  anthropic("claude-sonnet-4-5", 3, 15),
  anthropic("claude-sonnet-4-0", 3, 15),
  anthropic("claude-sonnet-4-20250514", 3, 15),
  anthropic("claude-haiku-4-5", 1, 5),
  anthropic("claude-3-5-haiku", 0.8, 4),
  flat("openai", "gpt-5.2", 1.75, 14, 0.175),
  flat("openai", "gpt-5.1", 1.25, 10, 0.125),
  flat("openai", "gpt-5", 1.25, 10, 0.125),
  flat("openai", "gpt-5-mini", 0.25, 2, 0.025),
  flat("openai", "gpt-5-nano", 0.05, 0.4, 0.005),
  flat("openai", "gpt-5-pro", 15, 120),
  flat("openai", "gpt-4.1", 2, 8, 0.5),
  flat("openai", "gpt-4.1-mini", 0.4, 1.6, 0.1),
  flat("openai", "gpt-4.1-nano", 0.1, 0.4, 0.025),
  flat("openai", "gpt-4o", 2.5, 10, 1.25),
  flat("openai", "gpt-4o-mini", 0.15, 0.6, 0.075),
  flat("gemini", "gemini-2.5-pro", 1.25, 10, 0.125),
  flat("gemini", "gemini-2.5-flash", 0.3, 2.5, 0.03),
  flat("gemini", "gemini-2.5-flash-lite", 0.1, 0.4, 0.01),
  bedrockClaude("anthropic.claude-opus-4-5", 5, 25),
  bedrockClaude("anthropic.claude-opus-4-1", 15, 75),
  bedrockClaude("anthropic.claude-sonnet-4-5", 3, 15),
  bedrockClaude("anthropic.claude-sonnet-4", 3, 15),
  bedrockClaude("anthropic.claude-haiku-4-5", 1, 5),
];

export interface CallCost {
  /** USD, or null when a needed price is unknown (never silently zero). */
  readonly costUsd: number | null;
  /** What the same tokens would cost with no caching (reads and writes billed as input). */
  readonly uncachedCostUsd: number | null;
  /** The price entry used (its `model` may be a prefix of the call's model). */
  readonly price?: ModelPrice;
  /** Why the cost is unknown. */
  readonly unknownReason?: string;
}

// A prefix must end where the id continues with a separator: "gpt-5" prices "gpt-5-2025-08-07" but not "gpt-5.2".
const SEPARATORS = new Set(["-", "@", ":"]);
// Bedrock cross-region inference profiles prefix the model id with a geography.
const BEDROCK_GEO = /^(us|eu|apac|ap|jp|au|ca|us-gov|global)\./;

export class PricingTable {
  private readonly entries = new Map<string, ModelPrice>();

  /** Later entries replace earlier ones with the same provider and model. */
  constructor(prices: readonly ModelPrice[]) {
    for (const price of prices) this.entries.set(`${price.provider}\u0000${price.model}`, price);
  }

  /** The shipped defaults, with config `overrides` replacing (or adding) entries. */
  static withDefaults(overrides: readonly ModelPrice[] = []): PricingTable {
    return new PricingTable([...DEFAULT_PRICES, ...overrides]);
  }

  /** Exact model id first, then the longest entry that is a prefix ending at a `-`, `@` or `:` boundary. */
  find(provider: Provider, model: string): ModelPrice | undefined {
    const id = provider === "bedrock" ? model.replace(BEDROCK_GEO, "") : model;
    const exact = this.entries.get(`${provider}\u0000${id}`);
    if (exact) return exact;
    let best: ModelPrice | undefined;
    for (const price of this.entries.values()) {
      if (price.provider !== provider || !id.startsWith(price.model)) continue;
      if (!SEPARATORS.has(id.charAt(price.model.length))) continue;
      if (!best || price.model.length > best.model.length) best = price;
    }
    return best;
  }

  cost(provider: Provider, model: string, usage: TokenUsage): CallCost {
    const price = this.find(provider, model);
    if (!price) return unknown(`no price for ${provider} model "${model}"; add a pricing entry`);
    const write1h = usage.cacheCreation1hInputTokens ?? 0;
    const write5m = usage.cacheCreationInputTokens - write1h;
    const parts: [number, number | undefined, string][] = [
      [usage.inputTokens, price.input, "input"],
      [usage.outputTokens, price.output, "output"],
      [usage.cacheReadInputTokens, price.cacheRead, "cache_read"],
      [write5m, price.cacheWrite, "cache_write"],
      [write1h, price.cacheWrite1h, "cache_write_1h"],
    ];
    let micro = 0;
    for (const [tokens, perMillion, name] of parts) {
      if (tokens === 0) continue;
      if (perMillion === undefined) {
        return { ...unknown(`no ${name} price for ${provider} model "${price.model}"`), price };
      }
      micro += tokens * perMillion;
    }
    const prompt = usage.inputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
    return {
      costUsd: micro / 1e6,
      uncachedCostUsd: (prompt * price.input + usage.outputTokens * price.output) / 1e6,
      price,
    };
  }
}

function unknown(reason: string): CallCost {
  return { costUsd: null, uncachedCostUsd: null, unknownReason: reason };
}
