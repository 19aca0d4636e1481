import type { Caller } from "../caller/caller.ts";
import { notFound } from "../errors.ts";
import { checkSize, LIMITS, withinLimit } from "../limits.ts";
import { runToEnd } from "../slices.ts";
import type { SkillContext } from "./context.ts";
import {
  SCOPE_KINDS,
  type ScopeKind,
  SKILL_ORIGINS,
  type SkillOrigin,
  TASK_TYPES,
  type TaskType,
} from "./model.ts";
import { decodePageToken, encodePageToken } from "./page-token.ts";
import { type ContextFormat, renderableLists, renderContext } from "./render.ts";
import { oneOf } from "./request.ts";
import {
  type CallOptions,
  detailsInSteps,
  type SkillDetails,
  type SkillSummary,
  sanitizer,
  summary,
} from "./sanitize.ts";
import { type SkillRow, visibleFilter } from "./store.ts";

export interface GetSkillsInput {
  readonly names: readonly string[];
  readonly format?: ContextFormat;
  readonly maxTokens?: number;
}

/** The rendered context of a call and what fitting it into its token budget cost. */
export interface BudgetReport {
  readonly formattedContext: string;
  readonly rawTokensEst: number;
  readonly finalTokensEst: number;
  readonly wasCompressed: boolean;
}

export interface GetSkillsResult extends BudgetReport {
  readonly skills: readonly SkillDetails[];
  /** Requested names the caller has no skill for (missing and invisible look the same). */
  readonly notFound: readonly string[];
}

export interface ListSkillsInput {
  readonly pageSize?: number;
  readonly pageToken?: string;
  readonly taskType?: TaskType;
  readonly origin?: SkillOrigin;
  readonly scope?: ScopeKind;
}

interface ListedSkill extends SkillSummary {
  readonly origin: SkillOrigin;
  readonly scope: ScopeKind;
  readonly useCount: number;
  readonly lastUsedAtMs: number | null;
}

export interface ListSkillsResult {
  readonly skills: readonly ListedSkill[];
  /** Empty when this is the last page. */
  readonly nextPageToken: string;
  readonly totalCount: number;
}

/**
 * The named skills the caller sees, redacted and gated, with their rendered context; records their
 * use. A generator that yields between texts (SkillLibrary runs it in slices): ten skills of a
 * megabyte each are a megabyte of redaction per skill.
 */
export function* getSkillsInSteps(
  context: SkillContext,
  caller: Caller,
  input: GetSkillsInput,
  options: CallOptions = {},
): Generator<void, GetSkillsResult> {
  const names = [...new Set(input.names ?? [])];
  checkSize(LIMITS.getSkillsNames, names.length);
  for (const name of names) checkSize(LIMITS.getSkillsName, name.length);
  const format = oneOf("format", input.format, ["raw", "injection"] as const) ?? "raw";
  const maxTokens = withinLimit(LIMITS.getSkillsMaxTokens, input.maxTokens);
  const rows = context.store.visibleByName(caller, names);
  const missing = names.filter((name) => !rows.has(name));
  if (missing.length === names.length)
    throw notFound(
      names.length === 1
        ? `skill ${JSON.stringify(names[0])} not found; use skill_search to find skills`
        : `none of the requested skills were found: ${names.map((n) => JSON.stringify(n)).join(", ")}; use skill_search to find skills`,
    );
  const sanitize = sanitizer(options.toolGate, context.redaction);
  const found = names.flatMap((name) => rows.get(name) ?? []);
  const skills = yield* detailsInSteps(found, sanitize);
  // Already visible: the views only leave out what no rendering within the budget can show.
  const views = runToEnd(renderableLists(skills, (_, text) => text, maxTokens)).map((lists, i) => ({
    ...(skills[i] as SkillDetails),
    ...lists,
  }));
  const rendered = renderContext(views, format, maxTokens);
  context.markUsed(skills.flatMap((s) => rows.get(s.name)?.id ?? []));
  context.emit("skill_get", caller, {
    requested_count: names.length,
    found_count: skills.length,
    format,
    raw_tokens_est: rendered.rawTokens,
    final_tokens_est: rendered.finalTokens,
    was_compressed: rendered.compressed,
  });
  return {
    skills,
    notFound: missing,
    formattedContext: rendered.text,
    rawTokensEst: rendered.rawTokens,
    finalTokensEst: rendered.finalTokens,
    wasCompressed: rendered.compressed,
  };
}

/** One page of the skills the caller sees, by name, with the total count. */
export function listSkills(
  context: SkillContext,
  caller: Caller,
  input: ListSkillsInput = {},
  options: CallOptions = {},
): ListSkillsResult {
  const pageSize = withinLimit(LIMITS.listSkillsPageSize, input.pageSize);
  const taskType = oneOf("task_type", input.taskType, TASK_TYPES);
  const origin = oneOf("origin", input.origin, SKILL_ORIGINS);
  const scope = oneOf("scope", input.scope, SCOPE_KINDS);
  const after = input.pageToken ? decodePageToken(input.pageToken) : undefined;
  const where = visibleFilter(caller, taskType);
  const conditions = [where.sql];
  const params: (string | number)[] = [...where.params];
  if (origin) {
    conditions.push("s.origin = ?");
    params.push(origin);
  }
  if (scope) {
    conditions.push("s.scope_kind = ?");
    params.push(scope);
  }
  const filtered = conditions.join(" AND ");
  // What the count depends on: the filter's text and its parameters (the caller's scope among them).
  const totalCount = context.countOf(
    JSON.stringify([filtered, params]),
    () =>
      context.store.get<{ n: number }>(`SELECT count(*) AS n FROM skills s WHERE ${filtered}`, params)?.n ??
      0,
  );
  const pageParams = [...params];
  let pageWhere = filtered;
  if (after) {
    // `name >= ?` first, so the page starts with a seek in the name index.
    pageWhere += " AND s.name >= ? AND (s.name > ? OR s.seq > ?)";
    pageParams.push(after.n, after.n, after.s);
  }
  // In name order from the name index, stopping at the page's end (with the scope index instead,
  // SQLite reads and sorts every visible skill for each page).
  const rows = context.store.all<SkillRow>(
    `SELECT s.* FROM skills s INDEXED BY skills_name WHERE ${pageWhere} ORDER BY s.name, s.seq LIMIT ?`,
    [...pageParams, pageSize + 1],
  );
  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1];
  const sanitize = sanitizer(options.toolGate, context.redaction);
  const skills = page.map((row) => ({
    ...summary(row, sanitize),
    origin: row.origin,
    scope: row.scope_kind,
    useCount: row.use_count,
    lastUsedAtMs: row.last_used_at_ms,
  }));
  context.emit("skill_list", caller, {
    result_count: skills.length,
    total_count: totalCount,
    page_size: pageSize,
  });
  return {
    skills,
    nextPageToken: rows.length > pageSize && last ? encodePageToken(last.name, last.seq) : "",
    totalCount,
  };
}
