/**
 * What the meaning half (src/semantic) and learning (src/learning) say of a request, worked out
 * before the search and handed to it as data: the same types for every catalog, over its docs.
 */

import type { Candidates } from "./ranker-options.ts";
import type { SemanticReport } from "./scores.ts";

/**
 * A catalog's index as the vector store sees it: each doc stored under an owner and a name (a tool's
 * owner and name, a skill's id), so a vector survives rebuilds of the index.
 */
export interface VectorDocs {
  readonly docCount: number;
  ownerOf(doc: number): string;
  nameOf(doc: number): string;
  /** The docs stored under `name` (any owner), or none. */
  docsNamed(name: string): readonly number[];
}

/** What semantic search needs of a request: its texts and the docs of one index it may find. */
export interface SemanticQuery<Index extends VectorDocs> {
  /** The request as meant, or each of its intents: what is embedded (fts.ts meaningTexts). */
  readonly texts: readonly string[];
  /** The build searched, and the docs of it the request may find (undefined: all). */
  readonly index: Index;
  readonly candidates: Candidates | undefined;
  /**
   * The request's best lexical score over those docs, in [0, 1] (undefined: not worked out): how much
   * its words already say. When many searches want the model at once, its time goes first to those
   * whose words say least — a request its words match well loses little by the static tier.
   */
  readonly wordsScore?: number;
}

/**
 * Semantic evidence for one request, worked out before the search over the docs of its
 * SemanticQuery, and fused into the lexical hits in the search itself (fusion.ts).
 */
export interface SemanticEvidence<Index extends VectorDocs> {
  /** The request it is the evidence for. */
  readonly query: SemanticQuery<Index>;
  /** The build it is over. */
  readonly index: Index;
  readonly report: SemanticReport;
  /** The request's vectors, one per meaning text (none when the model was unavailable). */
  readonly vectors: readonly Float32Array[];
  /** Lexical hits to rank before fusing: more than a page, since a doc may rise into it. */
  readonly lexicalDepth: number;
  /** The docs closest in meaning, best first; none when there is nothing to fuse. */
  readonly closest: readonly number[];
  /** A doc's semantic score in [0, 1], exactly; NaN if not findable or without a vector. */
  scoreOf(doc: number): number;
  /** A fused score's lexical share: `least`, plus `slope` per unit of the best lexical score, at most 1. */
  readonly lexicalShare: { readonly least: number; readonly slope: number };
}

/**
 * A tenant's learned preferences for one request, worked out before the search (src/learning) and
 * applied to an FTS search's hits (fusion.ts applyLearned). Only docs the search may return are
 * touched, so learning never reveals a hidden one.
 */
export interface LearnedEvidence {
  /** By name (a tool's name, a skill's name): in [-1, 1], how strongly this tenant's choices favour it. */
  readonly scores: ReadonlyMap<string, number>;
  /** The most a learned score of 1 moves a doc: score + weight × (1 − score). */
  readonly weight: number;
}
