/**
 * What a start opened, closed again in the reverse order: each part adds its closer as it opens, so a
 * start that fails half-way closes exactly what it opened, and a stop closes everything once.
 */
export class Closers {
  private readonly stack: (() => unknown)[] = [];
  private closing: Promise<void> | undefined;

  /** Adds the closer of a part just opened: the last added is closed first. */
  add(close: () => unknown): void {
    if (this.closing) throw new Error("a part was opened after its owner started closing");
    this.stack.push(close);
  }

  /**
   * Runs the next steps of a start: when one throws, everything opened so far is closed and the
   * step's error is thrown (a closer's error then is dropped: the start's is the one to fix).
   */
  async opening<T>(steps: () => Promise<T>): Promise<T> {
    try {
      return await steps();
    } catch (error) {
      await this.close().catch(() => {});
      throw error;
    }
  }

  /**
   * Closes every part, last opened first, once (later calls get the same promise). Every closer runs
   * even when one before it fails; the first failure is thrown at the end.
   */
  close(): Promise<void> {
    this.closing ??= this.closeAll();
    return this.closing;
  }

  private async closeAll(): Promise<void> {
    const failures: unknown[] = [];
    for (let close = this.stack.pop(); close !== undefined; close = this.stack.pop()) {
      try {
        await close();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length > 0) throw failures[0];
  }
}
