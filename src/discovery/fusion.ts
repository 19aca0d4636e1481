import type { SearchHit, SearchIndex, SemanticEvidence, Tool } from "./types.ts";

/**
 * An FTS search's lexical hits fused with the request's semantic evidence: score = w × lexical +
 * (1 − w) × semantic, w the evidence's lexical share at the best lexical score. A hit whose tool has
 * no vector keeps its lexical score, and the tools closest in meaning that the words missed join.
 * With nothing to fuse (no vector among the tools, or the model unavailable), the lexical page.
 */
export function fuse(
  index: SearchIndex,
  allowed: Uint8Array | undefined,
  lexical: readonly SearchHit[],
  limit: number,
  evidence: SemanticEvidence,
): SearchHit[] {
  if (evidence.closest.length === 0) return lexical.slice(0, limit);
  const bestLexical = lexical.reduce((best, hit) => Math.max(best, hit.lexicalScore), 0);
  const w = Math.min(1, evidence.lexicalShare.least + evidence.lexicalShare.slope * bestLexical);
  const byName = new Map<string, SearchHit>();
  for (const hit of lexical) {
    const doc = visibleDoc(index, hit.name, allowed);
    const semanticScore = doc < 0 ? Number.NaN : (evidence.scores[doc] as number);
    if (Number.isNaN(semanticScore)) byName.set(hit.name, hit);
    else
      byName.set(hit.name, { ...hit, semanticScore, score: w * hit.lexicalScore + (1 - w) * semanticScore });
  }
  for (const doc of evidence.closest) {
    const tool = index.docs[doc] as Tool;
    if (byName.has(tool.name)) continue;
    const semanticScore = evidence.scores[doc] as number;
    byName.set(tool.name, {
      name: tool.name,
      description: tool.description,
      score: (1 - w) * semanticScore,
      lexicalScore: 0,
      semanticScore,
      matchType: "semantic",
      loadingMode: tool.loadingMode,
    });
  }
  const order = new Map(lexical.map((hit, i) => [hit.name, i]));
  const hits = [...byName.values()].sort(
    (a, b) =>
      b.score - a.score ||
      (order.get(a.name) ?? Number.MAX_SAFE_INTEGER) - (order.get(b.name) ?? Number.MAX_SAFE_INTEGER) ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  return hits.slice(0, limit);
}

/** The doc of the visible tool called `name` (at most one per caller), or -1. */
function visibleDoc(index: SearchIndex, name: string, allowed: Uint8Array | undefined): number {
  const first = index.byName.get(name);
  if (first === undefined) return -1;
  for (let d = first; d < index.docs.length && index.docs[d]?.name === name; d++)
    if (!allowed || allowed[d] === 1) return d;
  return -1;
}
