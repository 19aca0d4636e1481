import type { Caller } from "../caller/caller.ts";
import { type LearnedEvidence, liftedByLearning } from "../discovery/index.ts";
import type { SemanticReport } from "../text/scores.ts";
import type { SkillContext } from "./context.ts";
import type { TaskType } from "./model.ts";
import { SEARCH_COLUMNS, type SearchRow, visibleFilter } from "./store.ts";

/** Semantic candidates read per search; hidden or other-type skills among them are dropped after. */
const CLOSEST = 40;
/** Skills the search missed that learning may add, the most favoured first. */
const LEARNED_DEPTH = 20;

/** Semantic evidence for one query (src/semantic/skill-search.ts), fused into full-text skill search. */
export interface SkillSemanticFusion {
  /** False when the query could not be embedded: the search stays lexical and says so. */
  readonly available: boolean;
  /** 1 when the query's vector was not ready in time (tool_search.semantic.max_wait_ms), else 0. */
  readonly textsPending: number;
  /** Skill ids closest in meaning, best first, with their semantic score in [0, 1]. */
  closest(k: number): readonly { readonly id: string; readonly score: number }[];
  /** A skill's semantic score, or undefined while it has no vector. */
  scoreOf(id: string): number | undefined;
  /** The lexical share of a fused score for a query whose best lexical score is `bestLexical`. */
  lexicalShare(bestLexical: number): number;
  /** Every skill has its vector; else the ones the caller can see without one are counted. */
  readonly complete: boolean;
  /** The query's vector, when it could be embedded: what learned requests are compared with. */
  readonly vector?: Float32Array;
}

/** A skill hit with the parts of its score. */
export interface FusedRow {
  readonly row: SearchRow;
  readonly score: number;
  readonly lexicalScore: number;
  readonly semanticScore: number;
  /** Found by meaning only. */
  readonly semanticOnly: boolean;
  /** Found only because the caller's tenant learned it for requests like this one. */
  readonly learnedOnly?: boolean;
  /** What the caller's tenant learned of it for this request, in [-1, 1]; absent = nothing. */
  readonly learnedScore?: number;
}

/**
 * Fuses the lexical hits (best first) with the skills closest in meaning that the caller may see (and
 * of `taskType`, when given): score = w × lexical + (1 − w) × semantic, a skill without a vector yet
 * keeping its lexical score. Without semantic evidence the lexical hits pass through. What the
 * caller's tenant learned (`learned`, by skill name) then moves the hits it knows, as for tools: a
 * learned score ℓ > 0 moves a score ℓ × weight of the way to 1, ℓ < 0 takes |ℓ| × weight of it away.
 */
export function fuseSkills(
  context: SkillContext,
  caller: Caller,
  taskType: TaskType | undefined,
  lexical: readonly { readonly row: SearchRow; readonly score: number }[],
  semantic: SkillSemanticFusion | undefined,
  limit: number,
  learned?: LearnedEvidence,
): { hits: FusedRow[]; report: SemanticReport } {
  const { hits, report } = fuseByMeaning(context, caller, taskType, lexical, semantic);
  const ranked = learned ? withLearned(context, caller, taskType, hits, learned) : hits;
  return { hits: ranked.slice(0, limit), report };
}

/**
 * The hits with the tenant's learned scores applied, best first (ties keep their order), and the
 * skills it favours that the search missed, if the caller may see them (scored by learning alone).
 */
function withLearned(
  context: SkillContext,
  caller: Caller,
  taskType: TaskType | undefined,
  hits: readonly FusedRow[],
  learned: LearnedEvidence,
): FusedRow[] {
  const lift = (score: number, l: number) => liftedByLearning(score, l, learned.weight);
  const lifted: FusedRow[] = hits.map((hit) => {
    const l = learned.scores.get(hit.row.name) ?? 0;
    return l === 0 ? hit : { ...hit, score: lift(hit.score, l), learnedScore: l };
  });
  const found = new Set(hits.map((hit) => hit.row.name));
  const missed = [...learned.scores]
    .filter(([name, l]) => l > 0 && !found.has(name))
    .sort((a, b) => b[1] - a[1])
    .slice(0, LEARNED_DEPTH);
  if (missed.length > 0) {
    const learnedOf = new Map(missed);
    for (const row of visibleRows(context, caller, taskType, "name", [...learnedOf.keys()])) {
      const l = learnedOf.get(row.name) ?? 0;
      lifted.push({
        row,
        score: lift(0, l),
        lexicalScore: 0,
        semanticScore: 0,
        semanticOnly: false,
        learnedOnly: true,
        learnedScore: l,
      });
    }
  }
  const order = new Map(lifted.map((hit, rank) => [hit, rank]));
  return lifted.sort((a, b) => b.score - a.score || (order.get(a) ?? 0) - (order.get(b) ?? 0));
}

/** The skills of `column` in `values` that the caller may see (and of `taskType`, when given). */
function visibleRows(
  context: SkillContext,
  caller: Caller,
  taskType: TaskType | undefined,
  column: "id" | "name",
  values: readonly string[],
): SearchRow[] {
  const where = visibleFilter(caller, taskType);
  return context.store.all<SearchRow>(
    `SELECT ${SEARCH_COLUMNS} FROM skills s WHERE s.${column} IN (${values.map(() => "?").join(",")}) AND ${where.sql}`,
    [...values, ...where.params],
  );
}

/** fuseSkills' hits before learning, every one of them, best first. */
function fuseByMeaning(
  context: SkillContext,
  caller: Caller,
  taskType: TaskType | undefined,
  lexical: readonly { readonly row: SearchRow; readonly score: number }[],
  semantic: SkillSemanticFusion | undefined,
): { hits: FusedRow[]; report: SemanticReport } {
  const lexicalOnly = (status: SemanticReport["status"]) => ({
    hits: lexical.map((h) => ({
      row: h.row,
      score: h.score,
      lexicalScore: h.score,
      semanticScore: 0,
      semanticOnly: false,
    })),
    report: { status, pending: 0, textsPending: semantic?.textsPending ?? 0 },
  });
  if (!semantic) return lexicalOnly("off");
  if (!semantic.available) return lexicalOnly(semantic.textsPending > 0 ? "partial" : "unavailable");
  const w = semantic.lexicalShare(lexical.reduce((best, h) => Math.max(best, h.score), 0));
  const byId = new Map<string, FusedRow>();
  for (const { row, score } of lexical) {
    const semanticScore = semantic.scoreOf(row.id);
    byId.set(row.id, {
      row,
      score: semanticScore === undefined ? score : w * score + (1 - w) * semanticScore,
      lexicalScore: score,
      semanticScore: semanticScore ?? 0,
      semanticOnly: false,
    });
  }
  const closest = semantic.closest(CLOSEST).filter((c) => !byId.has(c.id));
  if (closest.length > 0) {
    const rows = visibleRows(
      context,
      caller,
      taskType,
      "id",
      closest.map((c) => c.id),
    );
    const visible = new Map(rows.map((row) => [row.id, row]));
    for (const { id, score } of closest) {
      const row = visible.get(id);
      if (row)
        byId.set(id, {
          row,
          score: (1 - w) * score,
          lexicalScore: 0,
          semanticScore: score,
          semanticOnly: true,
        });
    }
  }
  const order = new Map(lexical.map((h, i) => [h.row.id, i]));
  const hits = [...byId.values()].sort(
    (a, b) =>
      b.score - a.score ||
      (order.get(a.row.id) ?? Number.MAX_SAFE_INTEGER) - (order.get(b.row.id) ?? Number.MAX_SAFE_INTEGER) ||
      (a.row.name < b.row.name ? -1 : a.row.name > b.row.name ? 1 : 0),
  );
  const pending = semantic.complete ? 0 : pendingFor(context, caller, semantic);
  return { hits, report: { status: pending > 0 ? "partial" : "ready", pending, textsPending: 0 } };
}

/** The skills the caller can see that have no vector yet (only asked while vectors are being computed). */
function pendingFor(context: SkillContext, caller: Caller, semantic: SkillSemanticFusion): number {
  const where = visibleFilter(caller, undefined);
  let pending = 0;
  for (const { id } of context.store.all<{ id: string }>(
    `SELECT s.id FROM skills s WHERE ${where.sql}`,
    where.params,
  ))
    if (semantic.scoreOf(id) === undefined) pending++;
  return pending;
}
