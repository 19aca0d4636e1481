/**
 * Shares turns of the event loop among many cooperating loops (e.g. every watch stream sending its
 * events). Each asks `spent()` right before its next piece of work (no await in between, or every loop
 * passes its check before any does its work): while the current turn has run less than the budget the
 * answer is `undefined` (carry on, no await, no allocation); after that it is a promise of a later
 * turn, so timers and I/O (other calls, health checks) run between slices.
 *
 * Without it, a burst of events fans out entirely in microtasks: every stream encodes and writes
 * until its HTTP/2 window is full, all in one turn (100 events × 500 streams: 0.3–0.6 s).
 */
export class TurnBudget {
  /** performance.now() when the current slice began; undefined between slices. */
  #sliceStart: number | undefined;
  #nextTurn: Promise<void> | undefined;
  readonly #endSlice = () => {
    this.#sliceStart = undefined;
    this.#nextTurn = undefined;
  };

  constructor(private readonly budgetMs: number) {}

  /**
   * undefined: carry on in this turn. Otherwise a promise that resolves in a later turn once this one
   * may go on; hundreds of waiters resuming together still take their turn one slice at a time.
   */
  spent(): Promise<void> | undefined {
    return this.#hasBudget() ? undefined : this.#waitForBudget();
  }

  #hasBudget(): boolean {
    const now = performance.now();
    if (this.#sliceStart === undefined) {
      this.#sliceStart = now;
      // Runs at the end of this turn (check phase), before a waiter's next turn begins.
      setImmediate(this.#endSlice);
      return true;
    }
    return now - this.#sliceStart < this.budgetMs;
  }

  async #waitForBudget(): Promise<void> {
    do {
      this.#nextTurn ??= new Promise((resolve) => setImmediate(resolve));
      await this.#nextTurn;
    } while (!this.#hasBudget());
  }
}

/**
 * Shared by every server stream's sends (watch streams): together they may spend about this long in
 * one turn, so a burst to hundreds of streams never stalls other calls for longer than that.
 */
export const streamSendBudget = new TurnBudget(10);
