import { describe, expect, it } from "vitest";
import { DEFAULT_CALIBRATION, parseCalibration, semanticScoreOf } from "../../src/semantic/calibration.ts";

describe("semantic scores from cosines", () => {
  it("never saturate: different cosines, even the highest, never share a score, and every score is inside (0, 1)", () => {
    const cosines = [0.7, 0.71, 0.8, 0.9, 0.95, 0.99, 1];
    const scores = cosines.map((c) => semanticScoreOf(c, DEFAULT_CALIBRATION));
    expect(new Set(scores).size).toBe(cosines.length);
    for (const s of scores) {
      expect(s).toBeGreaterThan(0);
      expect(s).toBeLessThan(1);
    }
    expect(semanticScoreOf(-1, DEFAULT_CALIBRATION)).toBeGreaterThan(0);
  });

  it("keep the cosines' order: strictly rising over the whole range", () => {
    let before = semanticScoreOf(-1, DEFAULT_CALIBRATION);
    for (let i = 1; i <= 2_000; i++) {
      const score = semanticScoreOf(-1 + i / 1_000, DEFAULT_CALIBRATION);
      expect(score).toBeGreaterThan(before);
      before = score;
    }
  });

  it("depend only on the cosine and the model's two parameters", () => {
    const calibration = { intercept: -2, slope: 5 };
    expect(semanticScoreOf(0.4, calibration)).toBeCloseTo(0.5, 12);
    expect(semanticScoreOf(0.4, calibration)).toBe(semanticScoreOf(0.4, { ...calibration }));
  });
});

describe("a model folder's calibration.json", () => {
  it("is two finite numbers, the slope positive", () => {
    expect(parseCalibration({ intercept: -3.5, slope: 7 })).toEqual({ intercept: -3.5, slope: 7 });
    expect(parseCalibration({ slope: 7 })).toBe('"intercept" must be a finite number (got undefined)');
    expect(parseCalibration({ intercept: 0, slope: "7" })).toBe(
      '"slope" must be a positive number (got "7")',
    );
    expect(parseCalibration({ intercept: 0, slope: -1 })).toBe('"slope" must be a positive number (got -1)');
  });

  it("is refused when it would round scores to 0 or 1", () => {
    expect(parseCalibration({ intercept: -20, slope: 40 })).toMatch(
      /at most 30, or scores would round to 0 or 1/,
    );
  });
});
