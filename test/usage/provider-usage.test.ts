import { describe, expect, it } from "vitest";
import {
  fromAnthropicUsage,
  fromBedrockUsage,
  fromGeminiUsage,
  fromOpenAIUsage,
  usageMigrations,
} from "../../src/usage/index.ts";

describe("provider usage mapping", () => {
  it("takes Anthropic's fields as they are, with the 1h part of cache writes", () => {
    expect(
      fromAnthropicUsage({
        input_tokens: 10,
        output_tokens: 5,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 30,
        cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 10 },
      }),
    ).toEqual({
      inputTokens: 10,
      outputTokens: 5,
      cacheReadInputTokens: 100,
      cacheCreationInputTokens: 30,
      cacheCreation1hInputTokens: 10,
    });
  });

  it("subtracts OpenAI's cached tokens from prompt_tokens, which include them", () => {
    expect(
      fromOpenAIUsage({
        prompt_tokens: 1200,
        completion_tokens: 30,
        prompt_tokens_details: { cached_tokens: 1024 },
      }),
    ).toEqual({
      inputTokens: 176,
      outputTokens: 30,
      cacheReadInputTokens: 1024,
      cacheCreationInputTokens: 0,
    });
  });

  it("reads the Responses API shape too", () => {
    expect(
      fromOpenAIUsage({ input_tokens: 50, output_tokens: 5, input_tokens_details: { cached_tokens: 40 } })
        .inputTokens,
    ).toBe(10);
  });

  it("subtracts Gemini's cached content from promptTokenCount and bills thoughts as output", () => {
    expect(
      fromGeminiUsage({
        promptTokenCount: 500,
        cachedContentTokenCount: 400,
        candidatesTokenCount: 20,
        thoughtsTokenCount: 80,
      }),
    ).toEqual({
      inputTokens: 100,
      outputTokens: 100,
      cacheReadInputTokens: 400,
      cacheCreationInputTokens: 0,
    });
  });

  it("maps Bedrock's cache read and write counts", () => {
    expect(
      fromBedrockUsage({
        inputTokens: 1,
        outputTokens: 2,
        cacheReadInputTokens: 3,
        cacheWriteInputTokens: 4,
      }),
    ).toEqual({
      inputTokens: 1,
      outputTokens: 2,
      cacheReadInputTokens: 3,
      cacheCreationInputTokens: 4,
    });
  });

  it("names its migrations usage/NNN-...", () => {
    for (const m of usageMigrations) expect(m.id).toMatch(/^usage\/\d{3}-[a-z0-9-]+$/);
  });
});
