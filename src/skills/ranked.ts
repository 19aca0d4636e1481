import type { Caller } from "../caller/caller.ts";
import type { MatchType, SearchStrategy, SearchType } from "../search/answer.ts";
import type { SemanticQuery } from "../search/evidence.ts";
import { meaningTexts } from "../search/fts.ts";
import type { DocHit } from "../search/fusion.ts";
import { hybridDepth, rankHybrid } from "../search/hybrid.ts";
import { type LexicalRequest, rankLexical, readLexical } from "../search/lexical.ts";
import { type Candidates, RANKING_DEFAULTS } from "../search/ranker-options.ts";
import { type QueryRewrite, SEMANTIC_OFF, type SemanticReport } from "../search/scores.ts";
import { fold, matches } from "../text/caller-regex.ts";
import type { SkillContext } from "./context.ts";
import type { TaskType } from "./model.ts";
import { type CallOptions, type SanitizerFor, sanitizer } from "./sanitize.ts";
import { SEARCH_COLUMNS, type SearchRow, type SqlPart, visibleFilter } from "./store.ts";
import { partitionKey, type SkillWordIndex } from "./word-index.ts";

/**
 * Skill ranking, the way tool search ranks (src/search): the request read once, ranked over the
 * caller's partitions of the skills' word index by its type (BM25F, regex or exact), fused with the
 * evidence by meaning and what the tenant learned (full text only), then each hit confirmed by the
 * SQL visibility predicate (a skill a nearer scope shadows is dropped there) and, for a pattern that
 * matched a skill's text, by that text as the caller sees it.
 */

/** A skill search read once: its query as its type reads it, over one build and the caller's view of it. */
export interface SkillSearch extends LexicalRequest {
  readonly index: SkillWordIndex;
  readonly candidates: Candidates;
}

/** A visible skill and how it scored. */
interface RankedSkill {
  readonly row: SearchRow;
  readonly hit: DocHit<MatchType>;
}

export interface RankedSkills {
  readonly hits: readonly RankedSkill[];
  readonly strategy: SearchStrategy;
  readonly rewrites: readonly QueryRewrite[];
  readonly semantic: SemanticReport;
}

/** The index partitions a caller may read: a narrowing pre-filter; the SQL predicate decides. */
function callerPartitions(caller: Caller): Set<string> {
  const partitions = new Set([partitionKey("global", "", "")]);
  if (caller.tenantId) {
    partitions.add(partitionKey("tenant", caller.tenantId, ""));
    if (caller.projectId) partitions.add(partitionKey("project", caller.tenantId, caller.projectId));
  }
  return partitions;
}

/** Reads a skill search once, over the newest build. */
export function readSkillSearch(
  context: SkillContext,
  caller: Caller,
  request: { readonly query: string; readonly type: SearchType; readonly taskType: TaskType | undefined },
): SkillSearch {
  const index = context.searchIndex();
  return {
    ...readLexical(request.query, request.type, context.readings),
    index,
    candidates: index.candidates(callerPartitions(caller), request.taskType),
  };
}

/**
 * What semantic search needs of a full-text skill search: the texts it is embedded as (repaired
 * against the words of the skills the caller may find, split into its intents) and those skills.
 */
export function skillMeaning(context: SkillContext, search: SkillSearch): SemanticQuery<SkillWordIndex> {
  const { index, candidates, read } = search;
  if (!read) throw new Error("the meaning of a skill search is worked out for full-text searches only");
  return { texts: meaningTexts(index, read, candidates, context.modelWords), index, candidates };
}

export function rankSkills(
  context: SkillContext,
  caller: Caller,
  search: SkillSearch,
  limit: number,
  options: CallOptions,
): RankedSkills {
  const { index, candidates } = search;
  // Meaning and learning speak of what a request means: not of a pattern or a name.
  const hybrid = search.type === "fts" ? options : {};
  const where = visibleFilter(caller, undefined);
  const sanitize = sanitizer(options.toolGate, context.redaction);
  const lexical = { repeat: RANKING_DEFAULTS.repeat, readings: context.readings };
  // The first `depth` docs almost always pass the checks (the index keeps to the caller's
  // partitions); when shadowed or hidden ones leave the page short, the search reads deeper.
  for (let depth = hybridDepth(limit, hybrid); ; depth *= 4) {
    const found = rankLexical(index, search, candidates, depth, lexical);
    const ranked = rankHybrid(index, search.query, found.hits, depth, hybrid, candidates.allowed);
    const hits = visibleInOrder(context, index, ranked, where)
      .filter(({ row, hit }) => hit.matchType !== "regex_text" || matchesAsSeen(search, row, sanitize))
      .slice(0, limit);
    if (hits.length >= limit || found.hits.length < depth)
      return {
        hits,
        strategy: found.strategy,
        rewrites: found.rewrites,
        semantic: hybrid.semantic?.report ?? SEMANTIC_OFF,
      };
  }
}

/**
 * Whether a pattern that matched a skill's text matches it as the caller sees it (redacted,
 * tool-gated), so a pattern cannot probe for hidden tool names or redacted secrets.
 */
function matchesAsSeen(search: SkillSearch, row: SearchRow, sanitize: SanitizerFor): boolean {
  const { regex } = search;
  if (!regex) return true;
  const seen = sanitize(row);
  const texts = [row.title, row.trigger_text, row.description, ...(JSON.parse(row.tags) as string[])];
  return texts.some((text) => {
    const shown = seen(text);
    return matches(regex, shown, fold(shown));
  });
}

/** The hits whose skill the caller may see, in their order, with their rows. */
function visibleInOrder(
  context: SkillContext,
  index: SkillWordIndex,
  hits: readonly DocHit<MatchType>[],
  where: SqlPart,
): RankedSkill[] {
  if (hits.length === 0) return [];
  const rows = context.store.all<SearchRow>(
    `SELECT ${SEARCH_COLUMNS} FROM skills s NOT INDEXED WHERE s.seq IN (${hits.map(() => "?").join(",")}) AND ${where.sql}`,
    [...hits.map((hit) => index.seqOf(hit.doc)), ...where.params],
  );
  const bySeq = new Map(rows.map((row) => [row.seq, row]));
  return hits.flatMap((hit) => {
    const row = bySeq.get(index.seqOf(hit.doc));
    return row ? [{ row, hit }] : [];
  });
}
