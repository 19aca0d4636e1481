import type { LearnedEvidence } from "../discovery/index.ts";
import { toolGateRewriter } from "./gate.ts";
import type { ScopeKind, Skill, SkillOrigin, TaskType, TextAuthor, ToolGate } from "./model.ts";
import { redactText } from "./redact.ts";
import { clip, type SkillView } from "./render.ts";
import type { SkillSemanticFusion } from "./semantic.ts";
import { rowToSkill, type SearchRow, type SkillRow } from "./store.ts";

/** Per-call options that depend on the caller's tool visibility. */
export interface CallOptions {
  readonly toolGate?: ToolGate;
  /** Semantic ranking for this call's query or task (full-text searches only). */
  readonly semantic?: SkillSemanticFusion;
  /** What the caller's tenant learned of skills for this query or task (full-text searches only). */
  readonly learned?: LearnedEvidence;
}

type Sanitize = (text: string) => string;
/** The sanitizer for a skill's text, which depends on who may have written it (its scope). */
export type SanitizerFor = (row: { scope_kind: ScopeKind }) => Sanitize;

/**
 * Redaction plus tool gating. Global skills are the operator's text; tenant and project skills may
 * be the tenant's own, gated so they never reveal whether a hidden tool exists (ToolService.toolGate).
 */
export function sanitizer(gate: ToolGate | undefined, redaction: boolean): SanitizerFor {
  const bySomeone = (author: TextAuthor): Sanitize => {
    const rewrite = toolGateRewriter(gate, author);
    return redaction ? (text) => redactText(rewrite(text)) : rewrite;
  };
  const operatorText = bySomeone("operator");
  const tenantText = bySomeone("tenant");
  return (row) => (row.scope_kind === "global" ? operatorText : tenantText);
}

export interface SkillSummary {
  readonly name: string;
  readonly title: string;
  readonly trigger: string;
  readonly taskType: TaskType;
  readonly tags: readonly string[];
}

/** A skill as returned to a caller: redacted, tool-gated, without other tenants' identifiers. */
export interface SkillDetails extends SkillView {
  readonly id: string;
  readonly origin: SkillOrigin;
  readonly originRef: string;
  readonly contentHash: string;
  readonly scope: ScopeKind;
  readonly extra: Readonly<Record<string, unknown>>;
  readonly stats: Skill["stats"];
}

export function summary(row: SearchRow, sanitizeFor: SanitizerFor): SkillSummary {
  const sanitize = sanitizeFor(row);
  return {
    name: row.name,
    title: sanitize(row.title),
    trigger: clip(sanitize(row.trigger_text), 300),
    taskType: row.task_type,
    tags: (JSON.parse(row.tags) as string[]).map(sanitize),
  };
}

export function details(row: SkillRow, sanitizeFor: SanitizerFor): SkillDetails {
  const sanitize = sanitizeFor(row);
  const skill = rowToSkill(row);
  return {
    id: skill.id,
    name: skill.name,
    title: sanitize(skill.title),
    description: sanitize(skill.description),
    trigger: sanitize(skill.trigger),
    taskType: skill.taskType,
    tags: skill.tags.map(sanitize),
    steps: skill.steps.map(sanitize),
    preconditions: skill.preconditions.map(sanitize),
    failureModes: skill.failureModes.map(sanitize),
    extra: sanitizeJson(skill.extra, sanitize) as Record<string, unknown>,
    origin: skill.origin,
    originRef: skill.originRef,
    contentHash: skill.contentHash,
    scope: skill.scope.kind,
    stats: skill.stats,
  };
}

function sanitizeJson(value: unknown, sanitize: Sanitize): unknown {
  if (typeof value === "string") return sanitize(value);
  if (Array.isArray(value)) return value.map((v) => sanitizeJson(v, sanitize));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, sanitizeJson(v, sanitize)]));
  return value;
}
