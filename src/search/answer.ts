/**
 * What every catalog's search is asked and answers beside its hits: the search types, how a hit
 * matched, which path ran, and one report (strategy, rewrites, meaning, match quality) built one way
 * for tools and skills.
 */

import type { QueryRewrite, SemanticReport } from "./scores.ts";

export const SEARCH_TYPES = ["fts", "regex", "exact"] as const;
export type SearchType = (typeof SEARCH_TYPES)[number];

/** What a search ran: the requested type, or "fuzzy" when an FTS search widened to fuzzy matching. */
export type EffectiveSearchType = SearchType | "fuzzy";

/** How a hit matched; the server maps it to `match_type`. */
export type MatchType =
  | "exact"
  | "exact_normalized"
  | "regex_full_name"
  | "regex_name_prefix"
  | "regex_name_substring"
  | "regex_text"
  | "fts"
  | "fts_fuzzy"
  | "semantic"
  | "learned";

/** Which path, or widening step of FTS, produced the hits (docs/design.md §4 "fallbacks are reported"). */
export type SearchStrategy = "and" | "or" | "fuzzy" | "regex" | "exact";

/** How well the best hit of a search matched (proto MatchQuality). */
export type MatchQuality = "none" | "weak" | "good";

/** What a search of any catalog reports beside its hits. */
export interface SearchReport {
  readonly effectiveSearchType: EffectiveSearchType;
  readonly strategy: SearchStrategy;
  /** Typo repairs and synonyms added to the query (FTS only). */
  readonly rewrites: readonly QueryRewrite[];
  readonly semantic: SemanticReport;
  readonly matchQuality: MatchQuality;
}

/** The report of a search whose path ran `found` and answered `hits` (after any score threshold). */
export function searchReport(
  type: SearchType,
  found: { readonly strategy: SearchStrategy; readonly rewrites: readonly QueryRewrite[] },
  semantic: SemanticReport,
  hits: readonly { readonly score: number }[],
  goodMatchScore: number,
): SearchReport {
  const best = hits.reduce((max, hit) => Math.max(max, hit.score), -1);
  return {
    effectiveSearchType: found.strategy === "fuzzy" ? "fuzzy" : type,
    strategy: found.strategy,
    rewrites: found.rewrites,
    semantic,
    matchQuality: hits.length === 0 ? "none" : best >= goodMatchScore ? "good" : "weak",
  };
}
