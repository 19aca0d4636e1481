/**
 * How long the model takes per padded token lately, from every inference it ran (queries, texts no one
 * waits for, catalog texts): a moving average that follows the machine within a few dozen inferences
 * (a fraction of a second of work), so a start under CPU contention does not keep searches from
 * waiting once the machine is quiet again, while one inference the scheduler delayed moves it little:
 * searches read it to tell whether the model would embed their request within their wait, and a
 * request should be read the same way each time it is asked.
 */
export class Pace {
  private ms = 0;

  /** Weight of the newest inference. */
  private static readonly FOLLOW = 0.1;
  /** An inference counts at most this many times the pace so far: a stall is noise, not the pace. */
  private static readonly SPIKE = 2;

  /** One inference took `ms` for `tokens` padded tokens (rows × padded length). */
  observe(ms: number, tokens: number): void {
    if (!(ms >= 0) || !(tokens > 0)) return;
    const perToken = ms / tokens;
    if (this.ms === 0) this.ms = perToken;
    else this.ms = (1 - Pace.FOLLOW) * this.ms + Pace.FOLLOW * Math.min(perToken, Pace.SPIKE * this.ms);
  }

  /** Milliseconds per padded token lately; 0 before the first inference. */
  get msPerToken(): number {
    return this.ms;
  }
}
