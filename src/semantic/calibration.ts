/**
 * How a model's cosine similarities become semantic scores: score = 1 / (1 + e^-(intercept + slope ×
 * cosine)). The curve rises strictly with the cosine and reaches neither 0 nor 1 for any cosine, so two
 * tools of different similarity never share a score and the ordering by meaning survives fusion. Its
 * two parameters are the model's: a model folder may hold `calibration.json`
 * (`{"intercept": …, "slope": …}`, fitted by bench/score-calibration.ts), and a folder without one is
 * scored with DEFAULT_CALIBRATION.
 */
export interface ScoreCalibration {
  readonly intercept: number;
  readonly slope: number;
}

/**
 * The shipped all-MiniLM-L6-v2's fit (its calibration.json), for model folders without a calibration
 * of their own: sentence models of its kind put unrelated texts and matching ones at similar cosines.
 */
export const DEFAULT_CALIBRATION: ScoreCalibration = { intercept: -4.33, slope: 8.802 };

/**
 * Keeps |intercept + slope × cosine| within this for every cosine in [-1, 1]: far from where a double's
 * logistic rounds to exactly 0 or 1 (about 37), so the curve never saturates.
 */
const MAX_EXPONENT = 30;

/** A cosine in [-1, 1] as a semantic score in (0, 1). */
export function semanticScoreOf(cosine: number, calibration: ScoreCalibration): number {
  return 1 / (1 + Math.exp(-(calibration.intercept + calibration.slope * cosine)));
}

/**
 * A calibration.json's content as a ScoreCalibration, or why it is not one (a message saying what to
 * fix): two finite numbers, a positive slope (a closer text must score higher) and no saturation.
 */
export function parseCalibration(value: Record<string, unknown>): ScoreCalibration | string {
  const { intercept, slope } = value;
  if (typeof intercept !== "number" || !Number.isFinite(intercept))
    return `"intercept" must be a finite number (got ${JSON.stringify(intercept)})`;
  if (typeof slope !== "number" || !Number.isFinite(slope) || slope <= 0)
    return `"slope" must be a positive number (got ${JSON.stringify(slope)})`;
  if (Math.abs(intercept) + slope > MAX_EXPONENT)
    return `|intercept| + slope must be at most ${MAX_EXPONENT}, or scores would round to 0 or 1 (got ${Math.abs(intercept) + slope})`;
  return { intercept, slope };
}
