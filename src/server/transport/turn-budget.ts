/**
 * Shares turns of the event loop among many cooperating loops (e.g. every watch stream sending its
 * events), so timers and I/O (other calls, health checks) run between slices of at most ~budget.
 *
 * `run(work)` meters exactly: it checks the budget and runs the work in one synchronous step. A check
 * followed by an await and then the work does not: every loop passes its check before any of them
 * works (microtasks interleave), so 500 streams would still each send in the same turn.
 *
 * Without it, a burst of events fans out entirely in microtasks: every stream encodes and writes
 * until its HTTP/2 window is full, all in one turn, which grows with events × streams.
 */
export class TurnBudget {
  /** performance.now() when the current slice began; undefined between slices. */
  private sliceStart: number | undefined;
  private nextTurn: Promise<void> | undefined;
  private readonly endSlice = () => {
    this.sliceStart = undefined;
    this.nextTurn = undefined;
  };

  constructor(private readonly budgetMs: number) {}

  /** Runs `work` now if this turn has budget left, otherwise in the first later turn that has. */
  run<T>(work: () => T): T | Promise<T> {
    return this.hasBudget() ? work() : this.runLater(work);
  }

  /**
   * Pacing only, for a loop whose work happens elsewhere after it yields: undefined = go on in this
   * turn, otherwise a promise of a later turn with budget left.
   */
  spent(): Promise<void> | undefined {
    return this.hasBudget() ? undefined : this.runLater(() => undefined);
  }

  private hasBudget(): boolean {
    const now = performance.now();
    if (this.sliceStart === undefined) {
      this.sliceStart = now;
      // Runs at the end of this turn (check phase), before a waiter's next turn begins.
      setImmediate(this.endSlice);
      return true;
    }
    return now - this.sliceStart < this.budgetMs;
  }

  private async runLater<T>(work: () => T): Promise<T> {
    do {
      this.nextTurn ??= new Promise((resolve) => setImmediate(resolve));
      await this.nextTurn;
    } while (!this.hasBudget());
    // Same microtask as the check above: the work counts against the slice it was admitted to.
    return work();
  }
}

/**
 * Shared by every server stream's sends (watch streams): together they may spend about this long in
 * one turn, so a burst to hundreds of streams never stalls other calls for longer than that.
 */
export const streamSendBudget = new TurnBudget(10);
