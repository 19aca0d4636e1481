import type { Caller } from "../caller/caller.ts";
import type { SemanticQuery } from "../search/evidence.ts";
import { ftsRank, meaningTexts, readQuery } from "../search/fts.ts";
import { type DocHit, lexicalHit } from "../search/fusion.ts";
import { hybridDepth, rankHybrid } from "../search/hybrid.ts";
import { RANKING_DEFAULTS } from "../search/ranker-options.ts";
import { type QueryRewrite, SEMANTIC_OFF, type SemanticReport } from "../search/scores.ts";
import type { SkillContext } from "./context.ts";
import type { TaskType } from "./model.ts";
import type { CallOptions } from "./sanitize.ts";
import { SEARCH_COLUMNS, type SearchRow, type SqlPart, visibleFilter } from "./store.ts";
import { partitionKey, type SkillWordIndex } from "./word-index.ts";

/**
 * Full-text skill ranking, the way tool search ranks (src/search): the request read and ranked by
 * BM25F over the caller's partitions of the skills' word index, fused with the evidence by meaning
 * and what the tenant learned, then each hit confirmed by the SQL visibility predicate (a skill a
 * nearer scope shadows is dropped there).
 */

/** A visible skill and how it scored. */
interface RankedSkill {
  readonly row: SearchRow;
  readonly hit: DocHit<"fts">;
}

export interface RankedSkills {
  readonly hits: readonly RankedSkill[];
  /** The words were widened past AND (to OR or fuzzy) because AND found too little. */
  readonly widened: boolean;
  readonly rewrites: readonly QueryRewrite[];
  readonly semantic: SemanticReport;
}

/** The index partitions a caller may read: a narrowing pre-filter; the SQL predicate decides. */
export function callerPartitions(caller: Caller): Set<string> {
  const partitions = new Set([partitionKey("global", "", "")]);
  if (caller.tenantId) {
    partitions.add(partitionKey("tenant", caller.tenantId, ""));
    if (caller.projectId) partitions.add(partitionKey("project", caller.tenantId, caller.projectId));
  }
  return partitions;
}

/**
 * What semantic search needs of a request for skills: the texts it is embedded as (repaired against
 * the words of the skills the caller may find, split into its intents) and those skills.
 */
export function skillMeaning(
  context: SkillContext,
  caller: Caller,
  query: string,
  taskType: TaskType | undefined,
): SemanticQuery<SkillWordIndex> {
  const index = context.searchIndex();
  const candidates = index.candidates(callerPartitions(caller), taskType);
  const texts = meaningTexts(index, readQuery(query, context.readings), candidates, context.modelWords);
  return { texts, index, candidates };
}

export function rankSkills(
  context: SkillContext,
  caller: Caller,
  query: string,
  taskType: TaskType | undefined,
  limit: number,
  options: CallOptions,
): RankedSkills {
  // The build the evidence by meaning is over, so its doc numbers mean the same skills.
  const index = options.semantic?.index ?? context.searchIndex();
  const candidates = index.candidates(callerPartitions(caller), taskType);
  const { semantic } = options;
  const where = visibleFilter(caller, undefined);
  const read = readQuery(query, context.readings);
  // The first `depth` docs almost always pass the SQL check (the index keeps to the caller's
  // partitions); when shadowed ones leave the page short, the search reads deeper.
  for (let depth = hybridDepth(limit, options); ; depth *= 4) {
    const found = ftsRank(index, read, candidates, depth, RANKING_DEFAULTS.repeat, context.readings);
    const lexical = found.docs.map((d) => lexicalHit(d.doc, d.score, "fts" as const));
    const ranked = rankHybrid(index, query, lexical, depth, options, candidates.allowed);
    const hits = visibleInOrder(context, index, ranked, where).slice(0, limit);
    if (hits.length >= limit || found.docs.length < depth)
      return {
        hits,
        widened: found.strategy !== "and",
        rewrites: found.rewrites,
        semantic: semantic?.report ?? SEMANTIC_OFF,
      };
  }
}

/** The hits whose skill the caller may see, in their order, with their rows. */
function visibleInOrder(
  context: SkillContext,
  index: SkillWordIndex,
  hits: readonly DocHit<"fts">[],
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
