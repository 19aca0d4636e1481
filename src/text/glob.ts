/**
 * Tool-name globs as the config and the caller's narrowing write them: `*` matches any run of
 * characters (dots included, so `github.*` covers every GitHub tool), `?` one character; matching
 * is case-sensitive and whole-name.
 *
 * Callers send globs (narrowing), so matching must stay cheap whatever the pattern: this is the
 * iterative wildcard match with single-star backtracking, O(name × pattern) at worst — unlike a
 * RegExp translation, where `*a*a*a*a*b` backtracks polynomially.
 */
export type GlobMatcher = (name: string) => boolean;

export function compileGlob(pattern: string): GlobMatcher {
  if (pattern === "*") return () => true;
  if (!/[*?]/.test(pattern)) return (name) => name === pattern;
  return (name) => wildcardMatch(pattern, name);
}

/** True when any of the patterns matches; an empty list matches nothing. */
export function compileGlobs(patterns: readonly string[]): GlobMatcher {
  const matchers = patterns.map(compileGlob);
  return (name) => matchers.some((matches) => matches(name));
}

function wildcardMatch(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let starP = -1;
  let starN = 0;
  while (n < name.length) {
    const c = pattern[p];
    if (c === "?" || (c !== undefined && c !== "*" && c === name[n])) {
      p++;
      n++;
    } else if (c === "*") {
      starP = p++;
      starN = n;
    } else if (starP >= 0) {
      // Let the last star swallow one more character and retry from there.
      p = starP + 1;
      n = ++starN;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}
