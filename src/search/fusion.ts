import type { LearnedEvidence, SemanticEvidence, VectorDocs } from "./evidence.ts";

/** One hit of any catalog, by doc, with the parts of its score. */
export interface DocHit<Kind extends string> {
  readonly doc: number;
  /** The final score in [0, 1]: lexical, or lexical fused with semantic and learned evidence. */
  readonly score: number;
  readonly lexicalScore: number;
  /** 0 when semantic ranking did not take part for this doc. */
  readonly semanticScore: number;
  /** In [-1, 1]; 0 when learning said nothing of this doc. */
  readonly learnedScore: number;
  /** How the search path found it, or "semantic" / "learned" when only meaning or learning did. */
  readonly matchType: Kind | "semantic" | "learned";
}

/** A doc found by the words alone, before any fusion. */
export function lexicalHit<Kind extends string>(doc: number, score: number, matchType: Kind): DocHit<Kind> {
  return { doc, score, lexicalScore: score, semanticScore: 0, learnedScore: 0, matchType };
}

/**
 * An FTS search's lexical hits fused with the request's semantic evidence: score = w × lexical +
 * (1 − w) × semantic, w the evidence's lexical share at the best lexical score. A hit whose doc has
 * no vector keeps its lexical score, and the docs closest in meaning that the words missed join.
 * With nothing to fuse (no vector among the docs, or the model unavailable), the lexical page.
 */
export function fuse<Kind extends string>(
  docs: VectorDocs,
  lexical: readonly DocHit<Kind>[],
  limit: number,
  evidence: SemanticEvidence<VectorDocs>,
): DocHit<Kind>[] {
  if (evidence.closest.length === 0) return lexical.slice(0, limit);
  const bestLexical = lexical.reduce((best, hit) => Math.max(best, hit.lexicalScore), 0);
  const w = Math.min(1, evidence.lexicalShare.least + evidence.lexicalShare.slope * bestLexical);
  const byDoc = new Map<number, DocHit<Kind>>();
  for (const hit of lexical) {
    const semanticScore = evidence.scoreOf(hit.doc);
    if (Number.isNaN(semanticScore)) byDoc.set(hit.doc, hit);
    else byDoc.set(hit.doc, { ...hit, semanticScore, score: w * hit.lexicalScore + (1 - w) * semanticScore });
  }
  for (const doc of evidence.closest) {
    if (byDoc.has(doc)) continue;
    const semanticScore = evidence.scoreOf(doc);
    byDoc.set(doc, {
      doc,
      score: (1 - w) * semanticScore,
      lexicalScore: 0,
      semanticScore,
      learnedScore: 0,
      matchType: "semantic",
    });
  }
  return ranked(docs, byDoc.values(), lexical, new Set()).slice(0, limit);
}

/**
 * A score in [0, 1] moved by a learned score ℓ in [-1, 1]: ℓ > 0 moves it ℓ × weight of the way to 1,
 * ℓ < 0 takes |ℓ| × weight of it away, so the lift is bounded and the score stays in [0, 1].
 */
function liftedByLearning(score: number, learned: number, weight: number): number {
  return learned >= 0 ? score + weight * learned * (1 - score) : score * (1 + weight * learned);
}

/**
 * `hits` (an FTS search's, best first, deeper than a page) with the tenant's learned preferences
 * applied (liftedByLearning). Docs the learning favours that the search missed join, if the search
 * may return them (`allowed`), scored as fusion would score them by meaning alone, then lifted. A doc
 * named like the request (`named`, by name) keeps its place above every learned one.
 */
export function applyLearned<Kind extends string>(
  docs: VectorDocs,
  allowed: Uint8Array | undefined,
  hits: readonly DocHit<Kind>[],
  limit: number,
  learned: LearnedEvidence,
  named: ReadonlySet<string>,
  semantic: SemanticEvidence<VectorDocs> | undefined,
): DocHit<Kind>[] {
  if (learned.scores.size === 0) return hits.slice(0, limit);
  const lifted = (score: number, l: number) => liftedByLearning(score, l, learned.weight);
  const byDoc = new Map<number, DocHit<Kind>>();
  const found = new Set<string>();
  for (const hit of hits) {
    const l = learned.scores.get(docs.nameOf(hit.doc)) ?? 0;
    byDoc.set(hit.doc, l === 0 ? hit : { ...hit, learnedScore: l, score: lifted(hit.score, l) });
    found.add(docs.nameOf(hit.doc));
  }
  for (const [name, l] of learned.scores) {
    if (l <= 0 || found.has(name)) continue;
    const doc = docs.docsNamed(name).find((d) => allowed === undefined || allowed[d] === 1);
    if (doc === undefined) continue;
    const semanticScore = semantic?.scoreOf(doc);
    const base =
      semantic === undefined || semanticScore === undefined || Number.isNaN(semanticScore)
        ? 0
        : (1 - semantic.lexicalShare.least) * semanticScore;
    byDoc.set(doc, {
      doc,
      score: lifted(base, l),
      lexicalScore: 0,
      semanticScore: base > 0 ? (semanticScore as number) : 0,
      learnedScore: l,
      matchType: "learned",
    });
  }
  return ranked(docs, byDoc.values(), hits, named).slice(0, limit);
}

/** Named docs first, then by score, then in the order the words found them, then by name. */
function ranked<Kind extends string>(
  docs: VectorDocs,
  hits: Iterable<DocHit<Kind>>,
  lexical: readonly DocHit<Kind>[],
  named: ReadonlySet<string>,
): DocHit<Kind>[] {
  const order = new Map(lexical.map((hit, i) => [hit.doc, i]));
  const isNamed = (hit: DocHit<Kind>) => Number(named.size > 0 && named.has(docs.nameOf(hit.doc)));
  return [...hits].sort((a, b) => {
    const x = docs.nameOf(a.doc);
    const y = docs.nameOf(b.doc);
    return (
      isNamed(b) - isNamed(a) ||
      b.score - a.score ||
      (order.get(a.doc) ?? Number.MAX_SAFE_INTEGER) - (order.get(b.doc) ?? Number.MAX_SAFE_INTEGER) ||
      (x < y ? -1 : x > y ? 1 : 0)
    );
  });
}
