import type { Caller } from "../caller/caller.ts";
import { invalidArgument } from "../errors.ts";
import { checkSize, LIMITS, withinLimit, withinRange } from "../limits.ts";
import {
  type MatchType,
  SEARCH_TYPES,
  type SearchReport,
  type SearchType,
  searchReport,
} from "../search/answer.ts";
import type { SkillContext } from "./context.ts";
import { TASK_TYPES, type TaskType } from "./model.ts";
import { rankSkills, readSkillSearch, type SkillSearch } from "./ranked.ts";
import { redactText } from "./redact.ts";
import { clip } from "./render.ts";
import { oneOf } from "./request.ts";
import { type CallOptions, type SkillSummary, sanitizer, summary } from "./sanitize.ts";

interface SkillSearchHit extends SkillSummary {
  /** The final score in [0, 1]: lexical, or lexical fused with semantic. */
  readonly score: number;
  readonly lexicalScore: number;
  /** 0 when semantic ranking did not take part for this skill. */
  readonly semanticScore: number;
  /** What the caller's tenant learned of it for this query, in [-1, 1]; 0 = nothing. */
  readonly learnedScore: number;
  readonly matchType: MatchType;
}

export interface SearchSkillsInput {
  readonly query: string;
  readonly type?: SearchType;
  readonly taskType?: TaskType;
  readonly limit?: number;
  /** 0–1: hits scoring below it are dropped; default 0 (keep every hit). */
  readonly minScore?: number;
}

export interface SearchSkillsResult extends SearchReport {
  readonly skills: readonly SkillSearchHit[];
}

/** A SearchSkills request checked and read once: its meaning and its search both consume it. */
export interface PreparedSkillSearch extends SkillSearch {
  readonly limit: number;
  readonly minScore: number;
}

/** Checks a request and reads it once, over the newest build. */
export function prepareSkillSearch(
  context: SkillContext,
  caller: Caller,
  input: SearchSkillsInput,
): PreparedSkillSearch {
  const query = (input.query ?? "").trim();
  if (query.length === 0) throw invalidArgument("query must not be empty");
  checkSize(LIMITS.searchSkillsQuery, query.length);
  const type = oneOf("search type", input.type, SEARCH_TYPES) ?? "fts";
  const taskType = oneOf("task_type", input.taskType, TASK_TYPES);
  return {
    ...readSkillSearch(context, caller, { query, type, taskType }),
    limit: withinLimit(LIMITS.searchSkillsLimit, input.limit),
    minScore: withinRange(LIMITS.searchSkillsMinScore, input.minScore),
  };
}

export function searchSkills(
  context: SkillContext,
  caller: Caller,
  search: PreparedSkillSearch,
  options: CallOptions = {},
): SearchSkillsResult {
  const { query, type, limit, minScore } = search;
  const sanitize = sanitizer(options.toolGate, context.redaction);
  const ranked = rankSkills(context, caller, search, limit, options);
  const skills = ranked.hits
    .filter(({ hit }) => hit.score >= minScore)
    .map(({ row, hit }) => ({
      ...summary(row, sanitize),
      score: hit.score,
      lexicalScore: hit.lexicalScore,
      semanticScore: hit.semanticScore,
      learnedScore: hit.learnedScore,
      matchType: hit.matchType,
    }));
  const report = searchReport(type, ranked, ranked.semantic, skills, context.goodMatchScore);
  context.emit("skill_search_query", caller, {
    query: clip(redactText(query), 200),
    search_type: type,
    effective_search_type: report.effectiveSearchType,
    strategy: report.strategy,
    result_count: skills.length,
    semantic_status: report.semantic.status,
    semantic_texts_pending: report.semantic.textsPending,
    semantic_tier: report.semantic.tier,
  });
  return { ...report, skills };
}
