/** What the BM25F ranker (ranker.ts) is tuned with, asked and answers, and the docs it may return. */

import type { ExpansionKind } from "./ranker-words.ts";

export interface RankerConfig {
  readonly k1: number;
  readonly weights: readonly number[];
  readonly b: readonly number[];
  /** Multiplier on the contribution of a term an unknown word was read as by prefix or abbreviation. */
  readonly fuzzyWeight: number;
  /** The same for a typo repair (a term within a few edits), always tried. */
  readonly typoWeight: number;
  /** Widen unknown words of long queries to fuzzy when fewer than `limit` docs matched. */
  readonly fillWithFuzzy: boolean;
  /** Extra weight per repetition of a word in the query: 1 + repeat · log(count). */
  readonly repeat: number;
  /** Exponent of the share of query terms a document covers (coordination). */
  readonly coordination: number;
  /** Pseudo-relevance feedback: first-pass docs to read (0 = off). */
  readonly prfDocs: number;
  /** Expansion terms added from those docs. */
  readonly prfTerms: number;
  /** Weight of the best expansion term relative to an original query word. */
  readonly prfWeight: number;
  /** Expansion terms must occur in at most this share of the candidates (discriminative). */
  readonly prfMaxDf: number;
  /** Expansion terms must occur in at least this many feedback docs. */
  readonly prfMinDocs: number;
  /** Exponent on idf: above 1 stresses rare query words further. */
  readonly idfPower: number;
}

/**
 * The ranking settings every catalog starts from, tuned on the public tool sets
 * (bench/lib/tune-discovery.ts): generic, not per dataset. A catalog adds its fields' weights.
 */
export const RANKING_DEFAULTS: Omit<RankerConfig, "weights" | "b"> = {
  k1: 2,
  fuzzyWeight: 0.4,
  // Chosen on the even half of the typo rows of bench/search-quality.ts (docs/search.md).
  typoWeight: 0.8,
  coordination: 0,
  fillWithFuzzy: true,
  repeat: 0.5,
  prfDocs: 3,
  prfTerms: 6,
  prfWeight: 0.2,
  prfMaxDf: 0.1,
  prfMinDocs: 2,
  idfPower: 1.25,
};

export interface RankedDoc {
  readonly doc: number;
  readonly relevance: number;
  readonly fuzzy: boolean;
}

export interface RankOptions {
  readonly limit: number;
  /** The docs that may be returned; undefined = every doc. Filters before statistics, ranking and limit. */
  readonly candidates?: Candidates;
  /** Per word weight (e.g. from repetition in the query); default 1. */
  readonly wordWeights?: readonly number[];
  /** Adjacent query word pairs ("a b"), scored against the phrases field; not counted as words. */
  readonly phrases?: readonly string[];
  /** Docs whose name equals the whole query; they go first. */
  readonly nameHits?: readonly number[];
  /** Per word, other readings (abbreviations, synonyms) searched for it at a discount. */
  readonly readings?: readonly (readonly WordReading[] | undefined)[];
  /** Per word, how it was typed (lower-case, unstemmed): what typo repair compares. Default: the word. */
  readonly surfaces?: readonly string[];
  /**
   * Per word, whether an unknown word may be read as a vocabulary term (typo, prefix, abbreviation);
   * default true. Not for literals (ids, paths, quoted text) nor for real words the catalog lacks.
   */
  readonly repairable?: readonly boolean[];
}

/** Another way to read a query word: its analysed terms, searched at `weight` of the word's own. */
export interface WordReading {
  /** As written in the synonym table, for query_rewrites. */
  readonly words: string;
  readonly terms: readonly string[];
  readonly weight: number;
}

/** A query word and what it was also searched as: its best expansion, or a reading. */
export interface WordRepair {
  readonly word: string;
  /** The vocabulary term (a stem) for an expansion; the reading's words for a synonym. */
  readonly term: string;
  readonly kind: ExpansionKind | "synonym";
}

export interface RankResult {
  readonly docs: RankedDoc[];
  readonly strategy: "and" | "or" | "fuzzy";
  /** Unknown query words that were searched as vocabulary terms, best expansion each. */
  readonly repairs: readonly WordRepair[];
  /**
   * The relevance of a tool that has every query word once in its name: the unit of the absolute
   * score (relevance / scale, capped at 1). It depends only on the query and the corpus statistics of
   * the candidates, so a tool's score does not change with the other hits or with `limit`.
   */
  readonly scale: number;
}

/**
 * The docs a search may return (allowed[doc] = 1) and the corpus statistics over them: N, and df per
 * term, counted as queries first need them. Its owner (views.ts keeps one per caller view and build)
 * passes the same set to every search of that view, so each df is counted once, not per query.
 */
export class Candidates {
  /** N: how many docs are allowed. */
  readonly count: number;
  /** df per term id over the allowed docs, -1 = not counted yet; sized by the ranker on first use. */
  df: Int32Array | undefined;

  constructor(readonly allowed: Uint8Array) {
    let count = 0;
    for (let d = 0; d < allowed.length; d++) count += allowed[d] ?? 0;
    this.count = count;
  }
}
