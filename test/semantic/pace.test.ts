import { describe, expect, it } from "vitest";
import { Pace } from "../../src/semantic/pace.ts";

describe("Pace (the model's time per padded token lately)", () => {
  it("is unknown (0) before the first inference, then that inference's", () => {
    const pace = new Pace();
    expect(pace.msPerToken).toBe(0);
    pace.observe(32, 128);
    expect(pace.msPerToken).toBe(0.25);
  });

  it("recovers within a few dozen inferences once a machine busy with other work is quiet again", () => {
    const pace = new Pace();
    // A start under CPU contention: every inference four times slower.
    for (let i = 0; i < 200; i++) pace.observe(80, 128);
    expect(pace.msPerToken).toBeCloseTo(0.625);
    // Quiet: thirty inferences (a fraction of a second of work) bring it within a fifth of the quiet pace.
    for (let i = 0; i < 30; i++) pace.observe(20, 128);
    expect(pace.msPerToken / (20 / 128)).toBeLessThan(1.2);
  });

  it("follows a machine that turns busy, a doubling at a time", () => {
    const pace = new Pace();
    pace.observe(20, 128);
    for (let i = 0; i < 40; i++) pace.observe(80, 128);
    expect(pace.msPerToken / (80 / 128)).toBeGreaterThan(0.9);
  });

  it("is moved little by one inference the scheduler stalled", () => {
    const pace = new Pace();
    for (let i = 0; i < 50; i++) pace.observe(20, 128);
    pace.observe(2_000, 128);
    expect(pace.msPerToken / (20 / 128)).toBeLessThan(1.15);
  });

  it("ignores an inference that measured nothing", () => {
    const pace = new Pace();
    pace.observe(10, 0);
    pace.observe(Number.NaN, 16);
    expect(pace.msPerToken).toBe(0);
  });
});
