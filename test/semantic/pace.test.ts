import { describe, expect, it } from "vitest";
import { Pace } from "../../src/semantic/pace.ts";

describe("Pace (the model's time per padded token lately)", () => {
  it("is unknown (0) before the first inference, then that inference's", () => {
    const pace = new Pace();
    expect(pace.msPerToken).toBe(0);
    pace.observe(32, 128);
    expect(pace.msPerToken).toBe(0.25);
  });

  it("recovers within a few inferences once a machine busy with other work is quiet again", () => {
    const pace = new Pace();
    // A start under CPU contention: every inference four times slower.
    for (let i = 0; i < 200; i++) pace.observe(80, 128);
    expect(pace.msPerToken).toBeCloseTo(0.625);
    // Quiet: ten inferences (a fraction of a second of work) bring it within a fifth of the quiet pace.
    for (let i = 0; i < 10; i++) pace.observe(20, 128);
    expect(pace.msPerToken / (20 / 128)).toBeLessThan(1.2);
  });

  it("ignores an inference that measured nothing", () => {
    const pace = new Pace();
    pace.observe(10, 0);
    pace.observe(Number.NaN, 16);
    expect(pace.msPerToken).toBe(0);
  });
});
