// How a long-running wayfind process sets up its own memory, whatever launched it (`node bin/wayfind.js
// serve`, `npx wayfind serve`, `npm start`, a process manager): plain JavaScript, since bin/wayfind.js
// applies it before anything else is loaded. docs/search.md "Memory" has the figures.

/**
 * Environment for glibc's allocator. The inference threads free large tensors of a few sizes; glibc's
 * default raises its mmap threshold after such a free, so later tensors come from per-thread arenas
 * that fragment and never shrink (hundreds of MB over a large catalog's embedding). A fixed threshold
 * returns every large buffer to the system when freed, and two arenas bound the rest. A value the
 * user set is kept. Other allocators ignore these names.
 */
export const ALLOCATOR_ENV = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072" };

/**
 * V8's young generation at 2 MB a semi-space instead of up to 16: the heap then stays flat where it
 * otherwise swells while a large catalog loads, for a little more time in minor collections. And the
 * old generation grown by a fifth after a full collection rather than V8's default of up to double:
 * after a catalog loads or a burst of requests, a server otherwise sits on a heap half empty until
 * V8 notices it is idle (docs/search.md "Cost").
 */
export const V8_FLAGS = ["--max-semi-space-size=2", "--heap-growing-percent=20"];

/** Set in the environment of a process that tuned itself, so it does not do so again (and says so). */
const TUNED = "WAYFIND_PROCESS_TUNED";

/**
 * Replaces this process with itself, the same arguments, plus the allocator environment and V8 flags
 * (process.execve, Node >= 22.15: same pid, nothing left behind), unless it was done already. Where
 * the process cannot be replaced it goes on as it is; the server says so in its log.
 */
export function tuneProcess() {
  if (process.env[TUNED] === "1" || typeof process.execve !== "function") return;
  const env = { ...ALLOCATOR_ENV, ...process.env, [TUNED]: "1" };
  const given = (flag) => process.execArgv.some((arg) => arg.startsWith(flag.split("=")[0]));
  const args = [...V8_FLAGS.filter((flag) => !given(flag)), ...process.execArgv, ...process.argv.slice(1)];
  try {
    process.execve(process.execPath, [process.execPath, ...args], env);
  } catch {
    // Not on this platform (Windows): go on untuned.
  }
}
