import { setImmediate as nextTurn } from "node:timers/promises";

/** Work per turn of a sliced build: well under the ~50 ms a turn may take. */
const SLICE_MS = 10;

/**
 * Runs `steps` (a generator that yields between small units of work) a slice of about SLICE_MS per
 * turn of the event loop, so a long build never holds up other calls. Resolves to the
 * generator's result, or to undefined when `wanted()` turns false first (the build was replaced, or
 * someone else ran it to its end).
 */
export async function runInSlices<T>(
  steps: Iterator<unknown, T>,
  wanted: () => boolean,
): Promise<T | undefined> {
  for (;;) {
    await nextTurn();
    if (!wanted()) return undefined;
    const until = performance.now() + SLICE_MS;
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
      if (performance.now() >= until) break;
    }
  }
}

/** Runs `steps` to its end at once: the synchronous fallback of a sliced build. */
export function runToEnd<T>(steps: Iterator<unknown, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
