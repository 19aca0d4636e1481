import type { SemanticTier } from "../search/scores.ts";

/** The share of a window's searches each tier read. */
export interface MeaningShares {
  readonly searches: number;
  readonly model: number;
  readonly static: number;
  readonly none: number;
}

export interface MeaningMeterOptions {
  /** Said once when the model's share of a window falls below `low`, and once when it is back at `recovered`. */
  readonly onChange: (state: "low" | "recovered", shares: MeaningShares) => void;
  readonly windowMs?: number;
  /** A window of fewer searches says nothing (a lull is not a fall). */
  readonly minSearches?: number;
  readonly low?: number;
  readonly recovered?: number;
  readonly now?: () => number;
}

/**
 * Watches which tier read each search over consecutive windows and says when the model's share falls
 * below a threshold (too many callers for the model: the static tier or words read the rest) and when
 * it is back, once each: an operator sees meaning degrade without a line per search.
 */
export class MeaningMeter {
  private readonly counts = { model: 0, static: 0, none: 0 };
  private windowStart: number;
  private low = false;
  private readonly windowMs: number;
  private readonly minSearches: number;
  private readonly lowShare: number;
  private readonly recoveredShare: number;
  private readonly now: () => number;

  constructor(private readonly options: MeaningMeterOptions) {
    this.windowMs = options.windowMs ?? 10_000;
    this.minSearches = options.minSearches ?? 20;
    this.lowShare = options.low ?? 0.5;
    this.recoveredShare = options.recovered ?? 0.9;
    this.now = options.now ?? Date.now;
    this.windowStart = this.now();
  }

  record(tier: SemanticTier): void {
    const now = this.now();
    if (now - this.windowStart >= this.windowMs) {
      this.close();
      this.windowStart = now;
    }
    this.counts[tier]++;
  }

  private close(): void {
    const { model, static: fast, none } = this.counts;
    const searches = model + fast + none;
    this.counts.model = this.counts.static = this.counts.none = 0;
    if (searches < this.minSearches) return;
    const shares = { searches, model: model / searches, static: fast / searches, none: none / searches };
    if (!this.low && shares.model < this.lowShare) {
      this.low = true;
      this.options.onChange("low", shares);
    } else if (this.low && shares.model >= this.recoveredShare) {
      this.low = false;
      this.options.onChange("recovered", shares);
    }
  }
}
