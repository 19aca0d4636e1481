import { describe, expect, it } from "vitest";
import { PricingTable } from "../../src/usage/index.ts";

const table = PricingTable.withDefaults();
const u = (input: number, output = 0, read = 0, write = 0) => ({
  inputTokens: input,
  outputTokens: output,
  cacheReadInputTokens: read,
  cacheCreationInputTokens: write,
});

describe("pricing", () => {
  it("ships Anthropic cache rules: 5m write 1.25×, 1h write 2×, read 0.1× input", () => {
    const p = table.find("anthropic", "claude-haiku-4-5");
    expect(p).toMatchObject({ input: 1, output: 5, cacheWrite: 1.25, cacheWrite1h: 2, cacheRead: 0.1 });
  });

  it("matches a dated model id by its longest prefix", () => {
    expect(table.find("anthropic", "claude-sonnet-4-5-20250929")?.model).toBe("claude-sonnet-4-5");
    expect(table.find("openai", "gpt-5-mini-2025-08-07")?.model).toBe("gpt-5-mini");
  });

  it("prefers an exact id over a prefix", () => {
    expect(table.find("anthropic", "claude-opus-4-20250514")?.input).toBe(15);
  });

  it("matches a prefix only at a -, @ or : boundary, so a new version is not priced as an old one", () => {
    expect(table.find("openai", "gpt-5.9")).toBeUndefined();
    expect(table.find("anthropic", "claude-sonnet-4-5@20250929")?.model).toBe("claude-sonnet-4-5");
  });

  it("strips a Bedrock cross-region prefix", () => {
    expect(table.find("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")?.model).toBe(
      "anthropic.claude-sonnet-4-5",
    );
  });

  it("lets a config entry override a default", () => {
    const custom = PricingTable.withDefaults([
      {
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        input: 1,
        output: 2,
        cacheWrite: 3,
        cacheRead: 0.5,
      },
    ]);
    expect(custom.cost("anthropic", "claude-sonnet-4-5", u(1_000_000, 0, 1_000_000)).costUsd).toBeCloseTo(
      1.5,
      10,
    );
  });

  it("makes the cost unknown when tokens need a price the entry lacks", () => {
    const cost = table.cost("openai", "gpt-5-pro", u(10, 0, 10));
    expect(cost.costUsd).toBeNull();
    expect(cost.unknownReason).toMatch(/no cache_read price/);
  });
});
