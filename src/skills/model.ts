/** The skill domain model (docs/design.md §4). Plain data: no transport or storage types. */

export const TASK_TYPES = ["browser", "api", "code", "domain", "unknown"] as const;
export type TaskType = (typeof TASK_TYPES)[number];

/** `learned` is reserved for skills written by agents; packs never overwrite them. */
export const SKILL_ORIGINS = ["pack", "learned"] as const;
export type SkillOrigin = (typeof SKILL_ORIGINS)[number];

export const SCOPE_KINDS = ["project", "tenant", "global"] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];

/** Where a skill lives. `tenantId` is set for tenant and project scope, `projectId` for project scope only. */
export interface SkillScope {
  readonly kind: ScopeKind;
  readonly tenantId: string;
  readonly projectId: string;
}

interface SkillStats {
  /** Unix epoch milliseconds. */
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  readonly lastUsedAtMs: number | null;
  readonly useCount: number;
}

/** The content of a skill: what a pack file defines and what `content_hash` covers. */
export interface SkillContent {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly trigger: string;
  readonly taskType: TaskType;
  readonly tags: readonly string[];
  readonly steps: readonly string[];
  readonly preconditions: readonly string[];
  readonly failureModes: readonly string[];
  /** Unknown fields of the source, kept verbatim (JSON values). */
  readonly extra: Readonly<Record<string, unknown>>;
}

export interface Skill extends SkillContent {
  /** `sk_…` */
  readonly id: string;
  readonly origin: SkillOrigin;
  /** `<pack>@<version>` for pack skills. */
  readonly originRef: string;
  /** sha256 (hex) of the normalised content. */
  readonly contentHash: string;
  readonly scope: SkillScope;
  readonly stats: SkillStats;
}

/** Who may have written a skill's text: the operator (global skills) or a tenant (tenant/project skills). */
export type TextAuthor = "operator" | "tenant";

/**
 * Tool-reference gating (provided by ToolService from the catalog and the caller's visibility), so
 * skill text never shows a tool the caller may not see, nor reveals whether such a tool exists.
 */
export interface ToolGate {
  /** Whether the caller may see a tool of this name: operator text keeps it, and rewrites other tool-like names. */
  isVisible(name: string): boolean;
  /**
   * Whether a namespace (or source) holds tools that exist for the caller's tenant, seen or not: in
   * operator text, any `namespace.name` under one reads as a tool, whatever its words.
   */
  isKnownNamespace(namespace: string): boolean;
  /** Tools the caller's tenant may see but its narrowing hides: rewritten in the tenant's own text. */
  narrowedAway(): readonly string[];
}
