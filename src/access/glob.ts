/**
 * Tool-name globs. `*` matches any run of characters, dots included (`github.*` matches
 * `github.repos.list`); every other character is literal; matching is case-insensitive, like the
 * catalog's name lookups. Narrowing globs come from callers, so matching must never backtrack
 * exponentially: a glob is split at `*` and its pieces are found left to right with `indexOf`
 * (greedy leftmost is exact for `*`-only globs), O(name × glob) worst case.
 */

export type NameMatcher = (name: string) => boolean;

interface Compiled {
  readonly prefix: string;
  readonly middle: readonly string[];
  readonly suffix: string;
  readonly minLength: number;
}

function compileOne(glob: string): Compiled {
  const parts = glob.toLowerCase().split("*");
  const prefix = parts[0] ?? "";
  const suffix = parts.length > 1 ? (parts[parts.length - 1] ?? "") : "";
  const middle = parts.slice(1, -1).filter((p) => p.length > 0);
  const minLength = prefix.length + suffix.length + middle.reduce((n, p) => n + p.length, 0);
  return { prefix, middle, suffix, minLength };
}

function matchesCompiled(c: Compiled, name: string): boolean {
  if (name.length < c.minLength || !name.startsWith(c.prefix) || !name.endsWith(c.suffix)) return false;
  let at = c.prefix.length;
  const end = name.length - c.suffix.length;
  for (const piece of c.middle) {
    const found = name.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

/** One matcher for a list of globs: true when any glob matches. An empty list matches nothing. */
export function compileGlobs(globs: readonly string[]): NameMatcher {
  const exact = new Set<string>();
  const wild: Compiled[] = [];
  let matchAll = false;
  for (const glob of globs) {
    if (!glob.includes("*")) exact.add(glob.toLowerCase());
    else if (/^\*+$/.test(glob)) matchAll = true;
    else wild.push(compileOne(glob));
  }
  if (matchAll) return () => true;
  if (exact.size === 0 && wild.length === 0) return () => false;
  return (name) => {
    const lower = name.toLowerCase();
    if (exact.has(lower)) return true;
    for (const c of wild) if (matchesCompiled(c, lower)) return true;
    return false;
  };
}

/**
 * Whether some name starting with `prefix` could match one of `globs` (case-insensitive): `github.`
 * could match `github.*`, `git*` and `github.search`, not `jira.*`. Exact for `*`-only globs.
 */
export function mayMatchWithPrefix(globs: readonly string[], prefix: string): boolean {
  const start = prefix.toLowerCase();
  return globs.some((glob) => {
    const lower = glob.toLowerCase();
    const star = lower.indexOf("*");
    if (star < 0) return lower.startsWith(start);
    const head = lower.slice(0, star);
    return head.startsWith(start) || start.startsWith(head);
  });
}

/** Whether every name starting with `prefix` matches one of `globs`: `github.*` or `*` for `github.`. */
export function matchesAllWithPrefix(globs: readonly string[], prefix: string): boolean {
  const start = prefix.toLowerCase();
  return globs.some((glob) => {
    const lower = glob.toLowerCase();
    const star = lower.indexOf("*");
    return star >= 0 && /^\**$/.test(lower.slice(star)) && start.startsWith(lower.slice(0, star));
  });
}
