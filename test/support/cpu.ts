/** Keeps the CPU busy for `ms`, like a handler or transport doing that much synchronous work. */
export function busyFor(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}
