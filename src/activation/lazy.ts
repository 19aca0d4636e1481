import { RE2JS } from "re2js";
import type { ToolAccess } from "../access/index.ts";
import { compileGlobs, type NameMatcher } from "../access/index.ts";
import type { Caller } from "../caller/caller.ts";
import type { LazyToolGroupConfig } from "../config/types.ts";
import type { Tool } from "../discovery/types.ts";
import { invalidArgument } from "../errors.ts";
import { ACTIVATION_LIMITS, type ActivationResult, type ActivationStore } from "./store.ts";

/** Only the start of a huge message is scanned, so matching cost stays bounded. */
const LAZY_MESSAGE_SCAN_CHARS = 100_000;

interface LazyGroupMatch {
  readonly group: string;
  /** Canonical names the caller may activate, sorted. */
  readonly tools: readonly string[];
}

export interface LazyGroups {
  /** Names of the groups whose triggers fire on `message`, in config order. */
  triggered(message: string): string[];
  /**
   * Tools to activate for `message`: members (by glob) of every triggered group among `candidates`,
   * filtered by `access.canActivate` — a group never reveals a tool the caller cannot see.
   */
  match(message: string, candidates: Iterable<Tool>, access: ToolAccess): LazyGroupMatch[];
}

interface CompiledGroup {
  readonly name: string;
  readonly members: NameMatcher;
  readonly keywords: readonly string[];
  readonly regexes: readonly RE2JS[];
}

const WORD = /[\p{L}\p{N}_]/u;
const isWordAt = (text: string, index: number): boolean => {
  const ch = text[index];
  return ch !== undefined && WORD.test(ch);
};
const normalize = (text: string): string => text.toLowerCase().replace(/\s+/g, " ");

/**
 * Case-insensitive word/phrase match: `deploy` matches "Deploy now" and "deploy." but not
 * "redeployment"; whitespace runs in keyword and message compare equal. Word characters are Unicode
 * letters, digits and `_`; a boundary is only required where the keyword itself starts/ends with one.
 */
export function keywordMatches(keyword: string, normalizedMessage: string): boolean {
  const needle = normalize(keyword).trim();
  if (needle === "") return false;
  const needStart = isWordAt(needle, 0);
  const needEnd = isWordAt(needle, needle.length - 1);
  let from = 0;
  for (;;) {
    const at = normalizedMessage.indexOf(needle, from);
    if (at < 0) return false;
    const end = at + needle.length;
    if (
      (!needStart || !isWordAt(normalizedMessage, at - 1)) &&
      (!needEnd || !isWordAt(normalizedMessage, end))
    ) {
      return true;
    }
    from = at + 1;
  }
}

export function compileLazyGroups(groups: readonly LazyToolGroupConfig[]): LazyGroups {
  const compiled: CompiledGroup[] = groups.map((group) => ({
    name: group.name,
    members: compileGlobs(group.tools),
    keywords: group.triggers.keywords,
    regexes: group.triggers.regexes.map((pattern) => {
      try {
        return RE2JS.compile(pattern);
      } catch (err) {
        throw invalidArgument(
          `lazy_tool_groups ${group.name}: invalid regex ${pattern}: ${(err as Error).message}`,
        );
      }
    }),
  }));

  const fired = (message: string): CompiledGroup[] => {
    const scanned = message.slice(0, LAZY_MESSAGE_SCAN_CHARS);
    const normalized = normalize(scanned);
    return compiled.filter(
      (g) =>
        g.keywords.some((k) => keywordMatches(k, normalized)) ||
        g.regexes.some((re) => re.matcher(scanned).find()),
    );
  };

  return {
    triggered: (message) => fired(message).map((g) => g.name),
    match: (message, candidates, access) => {
      const groupsFired = fired(message);
      if (groupsFired.length === 0) return [];
      const pool = [...candidates].filter((tool) => access.canActivate(tool));
      return groupsFired.map((g) => ({
        group: g.name,
        tools: pool
          .filter((tool) => g.members(tool.name))
          .map((tool) => tool.name)
          .sort(compareCodeUnits),
      }));
    },
  };
}

export interface LazyActivationResult extends ActivationResult {
  readonly groups: readonly string[];
}

/**
 * Activates, for the caller's run, the tools of every group `message` triggers. Same access check and
 * same store as explicit activation, so nothing hidden is activated and nothing is activated twice.
 */
export async function activateLazyGroups(
  deps: { readonly store: ActivationStore; readonly access: ToolAccess; readonly groups: LazyGroups },
  caller: Caller,
  message: string,
  candidates: Iterable<Tool>,
): Promise<LazyActivationResult> {
  const matches = deps.groups.match(message, candidates, deps.access).filter((m) => m.tools.length > 0);
  const activated: string[] = [];
  const alreadyActive: string[] = [];
  const seen = new Set<string>();
  for (const m of matches) {
    const fresh = m.tools.filter((name) => !seen.has(name));
    for (const name of fresh) seen.add(name);
    // The store caps names per call; a big group is activated in slices.
    for (let i = 0; i < fresh.length; i += ACTIVATION_LIMITS.maxNamesPerCall) {
      const result = await deps.store.activate(
        caller,
        fresh.slice(i, i + ACTIVATION_LIMITS.maxNamesPerCall),
        {
          scope: "run",
          source: "lazy_group",
          reason: `lazy_group:${m.group}`,
        },
      );
      activated.push(...result.activated);
      alreadyActive.push(...result.alreadyActive);
    }
  }
  return { activated, alreadyActive, groups: matches.map((m) => m.group) };
}

const compareCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
