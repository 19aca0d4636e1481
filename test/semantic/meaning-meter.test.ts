import { describe, expect, it } from "vitest";
import type { SemanticTier } from "../../src/search/scores.ts";
import { MeaningMeter, type MeaningShares } from "../../src/semantic/meaning-meter.ts";

function meter() {
  let now = 0;
  const said: [string, MeaningShares][] = [];
  const watched = new MeaningMeter({
    windowMs: 1_000,
    minSearches: 10,
    onChange: (state, shares) => said.push([state, shares]),
    now: () => now,
  });
  const window = (tiers: Record<SemanticTier, number>) => {
    for (const [tier, count] of Object.entries(tiers))
      for (let i = 0; i < count; i++) watched.record(tier as SemanticTier);
    now += 1_000;
  };
  return { said, window, close: () => watched.record("model") };
}

describe("MeaningMeter", () => {
  it("says once when the model reads under half a window's searches, and once when it is back", () => {
    const { said, window, close } = meter();
    window({ model: 20, static: 0, none: 0 });
    window({ model: 5, static: 15, none: 0 });
    window({ model: 2, static: 18, none: 0 });
    window({ model: 19, static: 1, none: 0 });
    close();
    expect(said.map(([state]) => state)).toEqual(["low", "recovered"]);
    expect(said[0]?.[1]).toEqual({ searches: 20, model: 0.25, static: 0.75, none: 0 });
  });

  it("says nothing of a window with too few searches to tell", () => {
    const { said, window, close } = meter();
    window({ model: 0, static: 3, none: 3 });
    close();
    expect(said).toEqual([]);
  });
});
