import type { HybridEvidence } from "../search/hybrid.ts";
import { toolGateRewriter } from "./gate.ts";
import type { ScopeKind, Skill, SkillOrigin, TaskType, TextAuthor, ToolGate } from "./model.ts";
import { redactText } from "./redact.ts";
import { clip, renderableLists, type SkillView } from "./render.ts";
import { rowToSkill, type SearchRow, type SkillRow } from "./store.ts";
import type { SkillWordIndex } from "./word-index.ts";

/** Per-call options that depend on the caller's tool visibility. */
/** A call's tool gate, and what is known of its query or task besides its words (full-text searches only). */
export interface CallOptions extends HybridEvidence<SkillWordIndex> {
  readonly toolGate?: ToolGate;
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

/** A skill's trigger as a listing shows it (and the MCP skills extension describes the skill by). */
export function listedTrigger(trigger: string): string {
  return clip(trigger, 300);
}

export function summary(row: SearchRow, sanitizeFor: SanitizerFor): SkillSummary {
  const sanitize = sanitizeFor(row);
  return {
    name: row.name,
    title: sanitize(row.title),
    trigger: listedTrigger(sanitize(row.trigger_text)),
    taskType: row.task_type,
    tags: (JSON.parse(row.tags) as string[]).map(sanitize),
  };
}

/**
 * Skills as returned to a caller, made visible one text at a time: a generator that yields after
 * each (runInSlices spreads many long skills over turns of the event loop).
 */
export function* detailsInSteps(
  rows: readonly SkillRow[],
  sanitizeFor: SanitizerFor,
): Generator<void, SkillDetails[]> {
  const out: SkillDetails[] = [];
  for (const row of rows) {
    const sanitize = sanitizeFor(row);
    const skill = rowToSkill(row);
    const head = headOf(skill, sanitize);
    yield;
    const lists = { steps: [] as string[], preconditions: [] as string[], failureModes: [] as string[] };
    for (const kind of ["steps", "preconditions", "failureModes"] as const)
      for (const item of skill[kind]) {
        lists[kind].push(sanitize(item));
        yield;
      }
    out.push({
      ...head,
      ...lists,
      extra: sanitizeJson(skill.extra, sanitize) as Record<string, unknown>,
      origin: skill.origin,
      originRef: skill.originRef,
      contentHash: skill.contentHash,
      scope: skill.scope.kind,
      stats: skill.stats,
    });
    yield;
  }
  return out;
}

/**
 * Skills as far as a rendering within `maxTokens` can show them (render.ts renderableLists), made
 * visible one text at a time; what no rendering could show is never read.
 */
export function* renderableInSteps(
  rows: readonly SkillRow[],
  sanitizeFor: SanitizerFor,
  maxTokens: number,
): Generator<void, SkillView[]> {
  const skills: Skill[] = [];
  for (const row of rows) {
    skills.push(rowToSkill(row));
    yield;
  }
  const sanitizers = rows.map(sanitizeFor);
  const lists = yield* renderableLists(
    skills,
    (index, text) => (sanitizers[index] as Sanitize)(text),
    maxTokens,
  );
  const heads: ReturnType<typeof headOf>[] = [];
  for (const [index, skill] of skills.entries()) {
    heads.push(headOf(skill, sanitizers[index] as Sanitize));
    yield;
  }
  return skills.map((_, index) => {
    const view = lists[index];
    return {
      ...(heads[index] as ReturnType<typeof headOf>),
      steps: view?.steps ?? [],
      preconditions: view?.preconditions ?? [],
      failureModes: view?.failureModes ?? [],
      stepCount: view?.stepCount ?? 0,
      omittedTokens: view?.omittedTokens ?? 0,
    };
  });
}

/** The fields of a skill other than its lists, visible (each bounded by the pack limits). */
function headOf(skill: Skill, sanitize: Sanitize) {
  return {
    id: skill.id,
    name: skill.name,
    title: sanitize(skill.title),
    description: sanitize(skill.description),
    trigger: sanitize(skill.trigger),
    taskType: skill.taskType,
    tags: skill.tags.map(sanitize),
  };
}

function sanitizeJson(value: unknown, sanitize: Sanitize): unknown {
  if (typeof value === "string") return sanitize(value);
  if (Array.isArray(value)) return value.map((v) => sanitizeJson(v, sanitize));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, sanitizeJson(v, sanitize)]));
  return value;
}
