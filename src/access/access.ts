import type { Caller } from "../caller/caller.ts";
import type { PolicyConfig, ToolSearchConfig, VisibilityRuleConfig } from "../config/types.ts";
import { type Tool, VERDICT } from "../discovery/types.ts";
import { checkSize, LIMITS } from "../limits.ts";
import { LruCache } from "../lru.ts";
import { compileGlobs, matchesAllWithPrefix, mayMatchWithPrefix, type NameMatcher } from "./glob.ts";

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

/** A caller's verdict on single tools. */
export interface ToolAccess {
  /** The visibility predicate: what the caller may see, get and activate. */
  canActivate(tool: Tool): boolean;
  /** Shown in every prompt without activation (and the caller may use it). */
  isAlwaysVisible(tool: Tool): boolean;
}

/** One caller's verdict (callers with the same tenant, entitlements and narrowing share it). */
export interface CallerAccess extends ToolAccess {
  /**
   * The verdict on something of a source that is not a tool (an MCP server's prompt, resource or
   * resource template), judged by its name as a tool of that name with the source's `tags` would be.
   */
  canSee(name: string, tags: readonly string[]): boolean;
  /**
   * False only when nothing named `prefix…` with `tags` can be visible to the caller (a server whose
   * namespace its rules hide): such a source need not even be asked what it holds.
   */
  mayShowNamespace(prefix: string, tags: readonly string[]): boolean;
  /**
   * The verdict on each of `tools` (a build's docs, a registry snapshot) in VERDICT bits
   * (ToolView.access); worked out once per list, so pass lists that do not change.
   */
  verdicts(tools: readonly Tool[]): Uint8Array;
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
  /** The globs as written, for what a whole namespace may show (mayShowNamespace). */
  readonly allowGlobs: readonly string[];
  readonly denyGlobs: readonly string[];
}

/** What a verdict reads of a tool: its name, aliases and tags. */
type Judged = Pick<Tool, "name" | "aliases" | "tags">;

const matchesNameOrAlias = (matcher: NameMatcher, tool: Judged): boolean =>
  matcher(tool.name) || tool.aliases.some((alias) => matcher(alias));

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
    allowGlobs: rule.allow,
    denyGlobs: rule.deny,
  }));
  const cacheSize = Math.max(1, options.cacheSize ?? 1024);

  const hasRequiredTags = (tool: Pick<Judged, "tags">): boolean => {
    if (requiredTags.length === 0) return true;
    const tags = new Set(tool.tags.map((t) => t.toLowerCase()));
    return requiredTags.every((t) => tags.has(t));
  };
  const inRegistry = (tool: Judged): boolean =>
    allowed(tool.name) && !matchesNameOrAlias(denied, tool) && hasRequiredTags(tool);
  /** Whether the policy may admit something named `prefix…` with `tags`. */
  const registryMayAdmit = (prefix: string, tags: readonly string[]): boolean =>
    hasRequiredTags({ tags }) &&
    mayMatchWithPrefix(options.policy.allowed, prefix) &&
    !matchesAllWithPrefix(options.policy.denied, prefix);
  const loadedAlways = (tool: Tool): boolean => tool.loadingMode === "always" || alwaysLoaded(tool.name);

  const build = (caller: Caller): CallerAccess => {
    const held = new Set(caller.entitlements);
    const matching = rules.filter(
      (r) =>
        (r.tenant === undefined || r.tenant === caller.tenantId) &&
        (r.entitlements === undefined || r.entitlements.every((e) => held.has(e))),
    );
    const failClosed = rules.length > 0 && matching.length === 0;
    const narrowing = caller.narrowToTools.length > 0 ? compileGlobs(caller.narrowToTools) : undefined;
    const canActivate = (tool: Judged): boolean => {
      if (failClosed || !inRegistry(tool)) return false;
      if (
        matching.length > 0 &&
        (!matching.some((r) => r.allow(tool.name)) || matching.some((r) => matchesNameOrAlias(r.deny, tool)))
      )
        return false;
      return narrowing === undefined || narrowing(tool.name);
    };
    // By list of tools (a build's docs, a registry version's): worked out once, not on every read.
    const verdictsOf = new WeakMap<readonly Tool[], Uint8Array>();
    const mayShowNamespace = (prefix: string, tags: readonly string[]): boolean =>
      !failClosed &&
      registryMayAdmit(prefix, tags) &&
      (matching.length === 0 ||
        (matching.some((r) => mayMatchWithPrefix(r.allowGlobs, prefix)) &&
          !matching.some((r) => matchesAllWithPrefix(r.denyGlobs, prefix)))) &&
      (caller.narrowToTools.length === 0 || mayMatchWithPrefix(caller.narrowToTools, prefix));
    return {
      canActivate,
      canSee: (name, tags) => canActivate({ name, aliases: [], tags }),
      mayShowNamespace,
      isAlwaysVisible: (tool) => canActivate(tool) && loadedAlways(tool),
      verdicts: (tools) => {
        let verdicts = verdictsOf.get(tools);
        if (verdicts === undefined) {
          verdicts = Uint8Array.from(tools, (tool) =>
            canActivate(tool) ? VERDICT.canActivate | (loadedAlways(tool) ? VERDICT.alwaysVisible : 0) : 0,
          );
          verdictsOf.set(tools, verdicts);
        }
        return verdicts;
      },
    };
  };

  // Callers alike (what decides a verdict) share one, with its verdicts; bounded: narrowing is theirs.
  const cache = new LruCache<string, CallerAccess>(cacheSize);
  const forCaller = (caller: Caller): CallerAccess => {
    checkNarrowing(caller.narrowToTools);
    const key = JSON.stringify([
      caller.tenantId,
      [...new Set(caller.entitlements)].sort(),
      [...new Set(caller.narrowToTools)].sort(),
    ]);
    let access = cache.get(key);
    if (access === undefined) {
      access = build(caller);
      cache.set(key, access);
    }
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
