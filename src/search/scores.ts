/**
 * Scores and what a ranked search reports beside its hits (query rewrites, semantic status), shared
 * by tool and skill search (docs/design.md §4). Scores are in [0, 1]: FTS scores are absolute
 * (src/search/fts.ts lexicalScore), regex hits score by where the pattern matched (patterns.ts).
 */

/**
 * Config `good_match_score`'s default. Tool search's lexical scores are calibrated so that 0.5 best
 * separates right from unrelated best hits on public queries (src/search/fts.ts lexicalScore).
 */
export const DEFAULT_GOOD_MATCH_SCORE = 0.5;

/** A word search added to the query before ranking (proto QueryRewrite). */
export interface QueryRewrite {
  /** The query word, lowercased. */
  readonly from: string;
  readonly to: string;
  readonly kind: "typo" | "synonym";
}

/**
 * What read a request's meaning (proto SemanticTier): the model, its static tier (when the model could
 * not in time), or none.
 */
export type SemanticTier = "model" | "static" | "none";

/**
 * Whether semantic ranking took part (proto SemanticStatus), which tier read the request, how many
 * candidates lacked a vector, and how many of the request's texts were ranked without meaning because
 * the model did not embed them in time (tool_search.semantic.max_wait_ms) and no static tier did.
 */
export interface SemanticReport {
  readonly status: "off" | "ready" | "partial" | "unavailable";
  readonly tier: SemanticTier;
  readonly pending: number;
  readonly textsPending: number;
}

export const SEMANTIC_OFF: SemanticReport = { status: "off", tier: "none", pending: 0, textsPending: 0 };

/** The first sentence or line of a description, at most `max` characters: enough to choose, cheap to list. */
export function firstSentence(text: string, max = 160): string {
  const first = text.split(/(?<=[.!?])\s|\n/)[0] ?? "";
  return first.length <= max ? first : `${first.slice(0, max - 3)}...`;
}
