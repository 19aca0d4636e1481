import { WayfindError } from "../errors.ts";

/** Every problem of a configuration at once, each `<file>[:line:col]: <key.path>: <what>; <fix>`. */
export class ConfigError extends WayfindError {
  constructor(readonly problems: readonly string[]) {
    super(
      "invalid_argument",
      `invalid wayfind configuration (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n${problems
        .map((p) => `  ${p}`)
        .join("\n")}`,
      problems,
    );
    this.name = "ConfigError";
  }
}

/** Levenshtein distance, small inputs only (config keys). */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

/** The closest candidate, if close enough to be a plausible typo (also catches camelCase for snake_case). */
export function didYouMean(input: string, candidates: readonly string[]): string | undefined {
  const normalized = input
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/-/g, "_")
    .toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = Math.min(editDistance(input, candidate), editDistance(normalized, candidate));
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  const limit = Math.max(2, Math.floor(input.length / 3));
  return bestDistance <= limit ? best : undefined;
}
