/**
 * One hybrid search for every catalog: the words ranked as deep as what else is known of the request
 * needs (hybridDepth), fused with its meaning, then lifted by what the caller's tenant learned
 * (rankHybrid). Tools rank a page through it; skills rank each depth through it, re-check the page
 * against their SQL scopes, and rank deeper when the check leaves the page short.
 */

import type { LearnedEvidence, SemanticEvidence, VectorDocs } from "./evidence.ts";
import type { WordIndex } from "./fts.ts";
import { applyLearned, type DocHit, fuse } from "./fusion.ts";
import { nameKey } from "./text.ts";

/** Lexical hits ranked before fusion, and docs read by meaning: a doc may rise into the page by meaning from this deep. */
export const FUSION_DEPTH = 20;
/** Lexical hits ranked before learned preferences apply: how far below the page a learned doc may rise from. */
const LEARNED_DEPTH = 50;

/** What is known of a request besides its words, worked out before its search (FTS only). */
export interface HybridEvidence<Index extends VectorDocs> {
  readonly semantic?: SemanticEvidence<Index> | undefined;
  readonly learned?: LearnedEvidence | undefined;
}

/** How deep a search ranks its words for a page of `limit`, given the evidence it will apply. */
export function hybridDepth(limit: number, evidence: HybridEvidence<VectorDocs>): number {
  const page = learnedOf(evidence) ? Math.max(limit, LEARNED_DEPTH) : limit;
  return evidence.semantic ? Math.max(page, evidence.semantic.lexicalDepth) : page;
}

/**
 * A search's lexical hits (best first, ranked `depth` deep) fused with the request's meaning, then
 * lifted by learning; `depth` hits at most. A doc named like the request keeps its place above every
 * learned one; a learned doc the words missed joins only if the search may return it (`allowed`).
 */
export function rankHybrid<Kind extends string>(
  index: VectorDocs & Pick<WordIndex, "keys">,
  query: string,
  lexical: readonly DocHit<Kind>[],
  depth: number,
  evidence: HybridEvidence<VectorDocs>,
  allowed: Uint8Array | undefined,
): DocHit<Kind>[] {
  const { semantic } = evidence;
  const fused = semantic ? fuse(index, lexical, depth, semantic) : lexical.slice(0, depth);
  const learned = learnedOf(evidence);
  if (!learned) return fused;
  const named = new Set((index.keys.get(nameKey(query)) ?? []).map((doc) => index.nameOf(doc)));
  return applyLearned(index, allowed, fused, depth, learned, named, semantic);
}

/** Learning takes part only when it says something of this request. */
function learnedOf(evidence: HybridEvidence<VectorDocs>): LearnedEvidence | undefined {
  return evidence.learned && evidence.learned.scores.size > 0 ? evidence.learned : undefined;
}
