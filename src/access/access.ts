import type { Caller } from "../caller/caller.ts";
import type { PolicyConfig, ToolSearchConfig, VisibilityRuleConfig } from "../config/types.ts";
import type { Tool } from "../discovery/types.ts";
import { checkSize, LIMITS } from "../limits.ts";
import { LruCache } from "../lru.ts";
import { compileGlobs, type NameMatcher } from "./glob.ts";

/**
 * THE one place that decides what a caller may see (docs/design.md §4).
 *
 * registry(tool)      = matches policy.allowed (by name)
 *                       AND matches no policy.denied glob (by name OR any alias: deny wins)
 *                       AND carries every policy.requireTags tag (case-insensitive).
 * canActivate(tool)   = registry(tool) AND rules(caller, tool) AND narrowing(caller, tool).
 * rules(caller, tool) — a rule matches a caller when its `tenant` (if set) equals the caller's tenant
 *                       and the caller holds every one of its `entitlements` (if set).
 *                       - no rules configured           → every registry tool passes;
 *                       - rules configured, none match  → nothing passes (fail closed);
 *                       - otherwise: at least one matching rule's `allow` matches the name and no
 *                         matching rule's `deny` matches the name or an alias.
 * narrowing           — empty = none; else the name must match one of the caller's globs. It can
 *                       only remove tools, never add.
 * isAlwaysVisible     = canActivate AND (loadingMode "always" OR name matches always_loaded_patterns).
 *
 * Deny globs also test aliases so a tool cannot slip past a deny written against an old name; allow
 * and narrowing globs test only the canonical name, so an alias can never widen access.
 */
export interface AccessControlOptions {
  readonly policy: PolicyConfig;
  readonly visibility: readonly VisibilityRuleConfig[];
  readonly toolSearch: Pick<ToolSearchConfig, "alwaysLoadedPatterns">;
  /** Distinct (tenant, entitlements, narrowing) keys kept in the per-caller cache; default 1024. */
  readonly cacheSize?: number;
}

export interface CallerAccess {
  /** Names this verdict: callers with the same tenant, entitlements and narrowing share it. */
  readonly key: string;
  /** The visibility predicate: what the caller may see, get and activate. */
  canActivate(tool: Tool): boolean;
  /** Shown in every prompt without activation (and the caller may use it). */
  isAlwaysVisible(tool: Tool): boolean;
}

export interface AccessControl {
  /** Static policy only: is the tool in the execution registry? */
  inRegistry(tool: Tool): boolean;
  forCaller(caller: Caller): CallerAccess;
  /** Tools the static policy removes, for the `tool_policy_filtered` event. */
  policyFilteredCount(tools: Iterable<Tool>): number;
}

/** Narrowing globs come from callers; bound the work one caller can ask for. */
function checkNarrowing(globs: readonly string[]): void {
  checkSize(LIMITS.narrowToTools, globs.length);
  for (const glob of globs) checkSize(LIMITS.narrowToToolsPattern, glob.length);
}

interface CompiledRule {
  readonly tenant: string | undefined;
  readonly entitlements: readonly string[] | undefined;
  readonly allow: NameMatcher;
  readonly deny: NameMatcher;
}

const matchesNameOrAlias = (matcher: NameMatcher, tool: Tool): boolean =>
  matcher(tool.name) || tool.aliases.some((alias) => matcher(alias));

/** Numbers access controls, so that two never hand out the same verdict key. */
let nextInstance = 0;

export function createAccessControl(options: AccessControlOptions): AccessControl {
  const allowed = compileGlobs(options.policy.allowed);
  const denied = compileGlobs(options.policy.denied);
  const requiredTags = options.policy.requireTags.map((t) => t.toLowerCase());
  const alwaysLoaded = compileGlobs(options.toolSearch.alwaysLoadedPatterns);
  const rules: CompiledRule[] = options.visibility.map((rule) => ({
    tenant: rule.match.tenant,
    entitlements: rule.match.entitlements,
    allow: compileGlobs(rule.allow),
    deny: compileGlobs(rule.deny),
  }));
  const cacheSize = Math.max(1, options.cacheSize ?? 1024);

  // Tools are immutable objects; identity-keyed caching cannot go stale.
  const registryCache = new WeakMap<Tool, boolean>();
  const inRegistry = (tool: Tool): boolean => {
    const cached = registryCache.get(tool);
    if (cached !== undefined) return cached;
    const tags = new Set(tool.tags.map((t) => t.toLowerCase()));
    const verdict =
      allowed(tool.name) && !matchesNameOrAlias(denied, tool) && requiredTags.every((t) => tags.has(t));
    registryCache.set(tool, verdict);
    return verdict;
  };

  // Whether a tool is always loaded does not depend on the caller: decide it once per tool.
  const alwaysCache = new WeakMap<Tool, boolean>();
  const loadedAlways = (tool: Tool): boolean => {
    let verdict = alwaysCache.get(tool);
    if (verdict === undefined) {
      verdict = tool.loadingMode === "always" || alwaysLoaded(tool.name);
      alwaysCache.set(tool, verdict);
    }
    return verdict;
  };

  const build = (caller: Caller, key: string): CallerAccess => {
    const held = new Set(caller.entitlements);
    const matching = rules.filter(
      (r) =>
        (r.tenant === undefined || r.tenant === caller.tenantId) &&
        (r.entitlements === undefined || r.entitlements.every((e) => held.has(e))),
    );
    const failClosed = rules.length > 0 && matching.length === 0;
    const narrowing = caller.narrowToTools.length > 0 ? compileGlobs(caller.narrowToTools) : undefined;
    const verdicts = new WeakMap<Tool, boolean>();
    const canActivate = (tool: Tool): boolean => {
      const cached = verdicts.get(tool);
      if (cached !== undefined) return cached;
      let verdict = !failClosed && inRegistry(tool);
      if (verdict && matching.length > 0) {
        verdict =
          matching.some((r) => r.allow(tool.name)) && !matching.some((r) => matchesNameOrAlias(r.deny, tool));
      }
      if (verdict && narrowing !== undefined) verdict = narrowing(tool.name);
      verdicts.set(tool, verdict);
      return verdict;
    };
    return { key, canActivate, isAlwaysVisible: (tool) => canActivate(tool) && loadedAlways(tool) };
  };

  // Bounded because narrowing globs are caller-controlled.
  const cache = new LruCache<string, CallerAccess>(cacheSize);
  // Verdicts of two access controls (two policies) never share a key.
  const instance = nextInstance++;
  const forCaller = (caller: Caller): CallerAccess => {
    checkNarrowing(caller.narrowToTools);
    const key = JSON.stringify([
      instance,
      caller.tenantId,
      [...new Set(caller.entitlements)].sort(),
      [...new Set(caller.narrowToTools)].sort(),
    ]);
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const access = build(caller, key);
    cache.set(key, access);
    return access;
  };

  return {
    inRegistry,
    forCaller,
    policyFilteredCount: (tools) => {
      let n = 0;
      for (const tool of tools) if (!inRegistry(tool)) n++;
      return n;
    },
  };
}
