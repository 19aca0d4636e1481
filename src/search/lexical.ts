import { type CallerRegex, compileCallerRegex } from "../text/caller-regex.ts";
import type { MatchType, SearchStrategy, SearchType } from "./answer.ts";
import { ftsRank, type QueryReadings, type ReadQuery, readQuery } from "./fts.ts";
import { type DocHit, lexicalHit } from "./fusion.ts";
import type { LiteralIndex } from "./literal-index.ts";
import { exactHits, type PatternDocs, regexHits } from "./patterns.ts";
import type { Candidates } from "./ranker-options.ts";
import type { QueryRewrite } from "./scores.ts";

/**
 * The lexical half of a search of any catalog, by its type: fts (BM25F, widening AND → OR → fuzzy),
 * regex or exact (patterns.ts). A request is read once (`readLexical`): its words for FTS, its
 * pattern compiled for regex; the meaning half and every depth of the ranking reuse the reading.
 */

/** A request's query as its search type reads it. */
export interface LexicalRequest {
  readonly query: string;
  readonly type: SearchType;
  /** FTS: its words read (shorthand spelled out, intents split). */
  readonly read: ReadQuery | undefined;
  /** Regex: the pattern compiled. */
  readonly regex: CallerRegex | undefined;
}

export function readLexical(query: string, type: SearchType, readings: QueryReadings): LexicalRequest {
  return {
    query,
    type,
    read: type === "fts" ? readQuery(query, readings) : undefined,
    regex: type === "regex" ? compileCallerRegex(query) : undefined,
  };
}

/** What a catalog lends the lexical search besides its docs. */
export interface LexicalOptions {
  /** Names of the docs `query` is an alias of (exact search); none by default. */
  readonly aliasTargets?: (query: string) => readonly string[];
  /** The docs' literal index, once built (regex scans without it until then). */
  readonly literalIndex?: LiteralIndex;
  /** Extra weight per repetition of a query word (RankerConfig.repeat). */
  readonly repeat: number;
  /** Abbreviations and synonyms (queryReadings). */
  readonly readings: QueryReadings;
}

export interface LexicalResult {
  /** Best first, at most the depth asked for. */
  readonly hits: DocHit<MatchType>[];
  readonly strategy: SearchStrategy;
  /** What the FTS path added to the query (typo repairs, synonyms); empty for regex and exact. */
  readonly rewrites: readonly QueryRewrite[];
}

/** The request's best `depth` docs among `candidates` (undefined: all). */
export function rankLexical(
  docs: PatternDocs,
  request: LexicalRequest,
  candidates: Candidates | undefined,
  depth: number,
  options: LexicalOptions,
): LexicalResult {
  const allowed = candidates?.allowed;
  const { query, read, regex } = request;
  if (regex)
    return {
      hits: regexHits(docs, regex, allowed, depth, options.literalIndex),
      strategy: "regex",
      rewrites: [],
    };
  if (!read) {
    const aliasTargets = options.aliasTargets?.(query) ?? [];
    return { hits: exactHits(docs, query, aliasTargets, allowed, depth), strategy: "exact", rewrites: [] };
  }
  const found = ftsRank(docs, read, candidates, depth, options.repeat, options.readings);
  return {
    hits: found.docs.map((d) => lexicalHit<MatchType>(d.doc, d.score, d.fuzzy ? "fts_fuzzy" : "fts")),
    strategy: found.strategy,
    rewrites: found.rewrites,
  };
}
