import type { Db } from "../database/sqlite.ts";
import type { Candidates, SearchHit, SearchIndex, SemanticFusion, Tool } from "../discovery/index.ts";
import type { SemanticReport } from "../text/scores.ts";
import { BackgroundSync, type BackgroundSyncOptions } from "./background-sync.ts";
import type { TextEmbedder } from "./embedder.ts";
import { TOOL_TEXT_VERSION, toolEmbeddingText } from "./text.ts";
import { type PackedVectors, TextVectors } from "./vectors.ts";

/** A query embeds at most this many characters: the model reads 128 word pieces anyway. */
export const QUERY_MAX_CHARS = 2_000;
/** Semantic candidates read per search, and lexical hits ranked before fusing. */
const DEPTH = 20;
/**
 * Cosine similarity (all-MiniLM-L6-v2) mapped to [0, 1]: unrelated texts score about 0.1, a request
 * and the tool that serves it 0.4–0.7. Fixed, so a semantic score depends only on query and tool.
 */
const COSINE_FLOOR = 0.1;
const COSINE_CEILING = 0.7;
/**
 * Trust the words more when they matched well: the lexical share is weight + ADAPTIVE_SLOPE × the best
 * lexical score of the query. Chosen with bench/semantic.ts on even-position public queries (base 0.3,
 * slope 0.4: the best mean R@5 keeping every set at or above lexical-only), reported on the odd ones.
 */
export const ADAPTIVE_SLOPE = 0.4;

export interface SemanticToolSearchOptions extends BackgroundSyncOptions {
  readonly db: Db;
  readonly embedder: TextEmbedder & { embedQuery(text: string): Promise<Float32Array> };
  /**
   * The lexical share of a fused score when the words matched nothing well (config
   * `tool_search.semantic.weight`); it grows by ADAPTIVE_SLOPE per unit of the query's best lexical score.
   */
  readonly weight: number;
}

/**
 * Semantic ranking of tools: keeps each tool's vector up to date in the background (TextVectors, off
 * the event loop in the embedder's worker) and fuses a query's cosine similarity with the lexical
 * score of each hit, over the caller's visible tools only. Tools whose vector is not computed yet are
 * ranked lexically, and the search says how many (SemanticReport).
 */
export class SemanticToolSearch {
  private readonly vectors: TextVectors;
  private readonly background: BackgroundSync;
  /** The catalog's newest index, whose tools the background sync is bringing vectors for. */
  private newest: SearchIndex | undefined;
  /** Per index and packing: each vector's doc id in the index (-1 = not in it) and the reverse. */
  private readonly positions = new WeakMap<
    SearchIndex,
    { pack: PackedVectors; docOf: Int32Array; vectorOf: Int32Array }
  >();

  constructor(private readonly options: SemanticToolSearchOptions) {
    this.vectors = new TextVectors(options.db, options.embedder, "semantic_tool_vectors", TOOL_TEXT_VERSION);
    this.background = new BackgroundSync(this.vectors, options);
  }

  /** Tools of the newest index (IndexHost's onIndexBuilt): their vectors are synced shortly. */
  indexBuilt(index: SearchIndex): void {
    this.newest = index;
    this.background.changed(() =>
      index.docs.map((t) => ({
        owner: t.owner,
        name: t.name,
        hash: t.hash,
        text: toolEmbeddingText(t),
      })),
    );
  }

  /** How many tools of the newest index still wait for their vector (readiness probes, logs). */
  progress(): { status: "ready" | "partial"; pending: number } {
    let pending = 0;
    for (const tool of this.newest?.docs ?? []) if (!this.vectors.has(tool.owner, tool.name)) pending++;
    return { status: pending > 0 ? "partial" : "ready", pending };
  }

  /** Resolves when every tool of the newest index has its vector (tests, benches). */
  settled(): Promise<void> {
    return this.background.settled();
  }

  /**
   * The fusion for one request read as `texts` (IndexHost.meaningTexts: the request, or each of its
   * intents): their vectors are embedded now (cached), the fusion runs inside the search.
   */
  async forTexts(texts: readonly string[]): Promise<SemanticFusion> {
    try {
      const vectors = await Promise.all(
        texts.map((text) => this.options.embedder.embedQuery(text.slice(0, QUERY_MAX_CHARS))),
      );
      return {
        lexicalDepth: DEPTH,
        fuse: (index, candidates, lexical, limit) => this.fuse(vectors, index, candidates, lexical, limit),
      };
    } catch {
      return {
        lexicalDepth: 0,
        fuse: (_index, _candidates, lexical, limit) => ({
          hits: lexical.slice(0, limit),
          report: { status: "unavailable", pending: 0 },
        }),
      };
    }
  }

  /** Stops syncing; the owner closes the embedder (shared with skill search), which ends a sync under way. */
  close(): Promise<void> {
    return this.background.close();
  }

  private fuse(
    queries: readonly Float32Array[],
    index: SearchIndex,
    candidates: Candidates | undefined,
    lexical: readonly SearchHit[],
    limit: number,
  ): { hits: SearchHit[]; report: SemanticReport } {
    const { pack, docOf, vectorOf } = this.positionsIn(index);
    const allowed = candidates?.allowed;
    const mask = new Uint8Array(pack.keys.length);
    let withVector = 0;
    for (let v = 0; v < mask.length; v++) {
      const doc = docOf[v] as number;
      if (doc >= 0 && (!allowed || allowed[doc] === 1)) {
        mask[v] = 1;
        withVector++;
      }
    }
    const visibleCount = candidates ? candidates.count : index.docs.length;
    const pending = Math.max(0, visibleCount - withVector);
    const report: SemanticReport = { status: pending > 0 ? "partial" : "ready", pending };
    if (withVector === 0) return { hits: lexical.slice(0, limit), report };

    // A tool is as close to the request as to the nearest of its texts.
    const cosine = queries.length > 0 ? pack.scan.bestScores(queries) : new Float32Array(pack.scan.count);
    const bestLexical = lexical.reduce((best, hit) => Math.max(best, hit.lexicalScore), 0);
    const w = Math.min(1, this.options.weight + ADAPTIVE_SLOPE * bestLexical);
    const byName = new Map<string, SearchHit>();
    // Lexical hits: fused with their tool's similarity when it has a vector, lexical alone if not.
    for (const hit of lexical) {
      const doc = visibleDoc(index, hit.name, allowed);
      const v = doc < 0 ? -1 : (vectorOf[doc] as number);
      if (v < 0) {
        byName.set(hit.name, hit);
        continue;
      }
      const semanticScore = semanticScoreOf(cosine[v] as number);
      byName.set(hit.name, { ...hit, semanticScore, score: w * hit.lexicalScore + (1 - w) * semanticScore });
    }
    // The closest tools by meaning that the words missed.
    for (const { doc: v, score } of pack.scan.best(cosine, DEPTH, mask)) {
      const tool = index.docs[docOf[v] as number] as Tool;
      if (byName.has(tool.name)) continue;
      const semanticScore = semanticScoreOf(score);
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
    return { hits: hits.slice(0, limit), report };
  }

  private positionsIn(index: SearchIndex): { pack: PackedVectors; docOf: Int32Array; vectorOf: Int32Array } {
    const pack = this.vectors.pack();
    const known = this.positions.get(index);
    if (known && known.pack === pack) return known;
    const docOf = new Int32Array(pack.keys.length).fill(-1);
    const vectorOf = new Int32Array(index.docs.length).fill(-1);
    pack.keys.forEach((key, v) => {
      const first = index.byName.get(key.name);
      if (first === undefined) return;
      for (let d = first; d < index.docs.length && index.docs[d]?.name === key.name; d++)
        if (index.docs[d]?.owner === key.owner) {
          docOf[v] = d;
          vectorOf[d] = v;
          break;
        }
    });
    const entry = { pack, docOf, vectorOf };
    this.positions.set(index, entry);
    return entry;
  }
}

/** The doc of the visible tool called `name` (at most one per caller), or -1. */
function visibleDoc(index: SearchIndex, name: string, allowed: Uint8Array | undefined): number {
  const first = index.byName.get(name);
  if (first === undefined) return -1;
  for (let d = first; d < index.docs.length && index.docs[d]?.name === name; d++)
    if (!allowed || allowed[d] === 1) return d;
  return -1;
}

/** A cosine as a semantic score in [0, 1] (COSINE_FLOOR → 0, COSINE_CEILING → 1). */
export function semanticScoreOf(cosine: number): number {
  return Math.min(1, Math.max(0, (cosine - COSINE_FLOOR) / (COSINE_CEILING - COSINE_FLOOR)));
}
