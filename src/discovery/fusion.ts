import type { LearnedEvidence, SearchHit, SearchIndex, SemanticEvidence, Tool } from "./types.ts";

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
    const semanticScore = doc < 0 ? Number.NaN : evidence.scoreOf(doc);
    if (Number.isNaN(semanticScore)) byName.set(hit.name, hit);
    else
      byName.set(hit.name, { ...hit, semanticScore, score: w * hit.lexicalScore + (1 - w) * semanticScore });
  }
  for (const doc of evidence.closest) {
    const tool = index.docs[doc] as Tool;
    if (byName.has(tool.name)) continue;
    const semanticScore = evidence.scoreOf(doc);
    byName.set(tool.name, {
      name: tool.name,
      description: tool.description,
      score: (1 - w) * semanticScore,
      lexicalScore: 0,
      semanticScore,
      learnedScore: 0,
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

/**
 * A score in [0, 1] moved by a learned score ℓ in [-1, 1]: ℓ > 0 moves it ℓ × weight of the way to 1,
 * ℓ < 0 takes |ℓ| × weight of it away, so the lift is bounded and the score stays in [0, 1]. Tools and
 * skills alike.
 */
export function liftedByLearning(score: number, learned: number, weight: number): number {
  return learned >= 0 ? score + weight * learned * (1 - score) : score * (1 + weight * learned);
}

/**
 * `hits` (an FTS search's, best first, deeper than a page) with the tenant's learned preferences
 * applied: a learned score ℓ > 0 moves a hit's score by ℓ × weight of the way to 1, ℓ < 0 takes
 * |ℓ| × weight of it away, so the lift is bounded and the score stays in [0, 1]. Tools the learning
 * favours that the search missed join, if the search may return them. A tool named like the request
 * (`named`) keeps its place above every learned one.
 */
export function applyLearned(
  index: SearchIndex,
  allowed: Uint8Array | undefined,
  hits: readonly SearchHit[],
  limit: number,
  learned: LearnedEvidence,
  named: ReadonlySet<string>,
  semantic: SemanticEvidence | undefined,
): SearchHit[] {
  if (learned.scores.size === 0) return hits.slice(0, limit);
  const lifted = (score: number, l: number) => liftedByLearning(score, l, learned.weight);
  const byName = new Map<string, SearchHit>();
  for (const hit of hits) {
    const l = learned.scores.get(hit.name) ?? 0;
    byName.set(hit.name, l === 0 ? hit : { ...hit, learnedScore: l, score: lifted(hit.score, l) });
  }
  for (const [name, l] of learned.scores) {
    if (l <= 0 || byName.has(name)) continue;
    const doc = visibleDoc(index, name, allowed);
    if (doc < 0) continue;
    const tool = index.docs[doc] as Tool;
    const semanticScore = semantic?.scoreOf(doc);
    // As fusion would score it by meaning alone, at the least lexical share.
    const base =
      semantic === undefined || semanticScore === undefined || Number.isNaN(semanticScore)
        ? 0
        : (1 - semantic.lexicalShare.least) * semanticScore;
    byName.set(name, {
      name,
      description: tool.description,
      score: lifted(base, l),
      lexicalScore: 0,
      semanticScore: base > 0 ? (semanticScore as number) : 0,
      learnedScore: l,
      matchType: "learned",
      loadingMode: tool.loadingMode,
    });
  }
  const order = new Map(hits.map((hit, i) => [hit.name, i]));
  return [...byName.values()]
    .sort(
      (a, b) =>
        Number(named.has(b.name)) - Number(named.has(a.name)) ||
        b.score - a.score ||
        (order.get(a.name) ?? Number.MAX_SAFE_INTEGER) - (order.get(b.name) ?? Number.MAX_SAFE_INTEGER) ||
        (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    )
    .slice(0, limit);
}
