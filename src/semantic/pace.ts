/**
 * How long the model takes per padded token lately, from every inference it ran (queries, texts no one
 * waits for, catalog texts): a moving average that follows the machine within a few inferences, so a
 * start under CPU contention does not keep searches from waiting once the machine is quiet again.
 * Searches read it to tell whether the model would embed their request within their wait.
 */
export class Pace {
  private ms = 0;

  /** Weight of the newest inference: the average follows a change within a few inferences. */
  private static readonly FOLLOW = 0.25;

  /** One inference took `ms` for `tokens` padded tokens (rows × padded length). */
  observe(ms: number, tokens: number): void {
    if (!(ms >= 0) || !(tokens > 0)) return;
    const perToken = ms / tokens;
    this.ms = this.ms === 0 ? perToken : (1 - Pace.FOLLOW) * this.ms + Pace.FOLLOW * perToken;
  }

  /** Milliseconds per padded token lately; 0 before the first inference. */
  get msPerToken(): number {
    return this.ms;
  }
}
