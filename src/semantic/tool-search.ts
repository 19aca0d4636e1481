import type { Db } from "../database/sqlite.ts";
import type { SearchIndex, SemanticEvidence, SemanticQuery } from "../discovery/index.ts";
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
 * the event loop in the embedder's worker) and gives a request its evidence, a query's cosine
 * similarity to each tool it may find, which the search fuses with the lexical scores
 * (src/discovery/fusion.ts). Tools whose vector is not computed yet are ranked lexically, and the
 * search says how many (SemanticReport).
 */
export class SemanticToolSearch {
  private readonly vectors: TextVectors;
  private readonly background: BackgroundSync;
  /** The catalog's newest index, whose tools the background sync is bringing vectors for. */
  private newest: SearchIndex | undefined;
  /** Per index and packing: each vector's doc id in the index (-1 = not in it). */
  private readonly positions = new WeakMap<SearchIndex, { pack: PackedVectors; docOf: Int32Array }>();

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
   * The evidence for one request (IndexHost.meaningOf: the request, or each of its intents, and the
   * tools it may find): the texts' vectors are embedded now (cached), then each tool's similarity.
   */
  async evidence(query: SemanticQuery): Promise<SemanticEvidence> {
    let vectors: Float32Array[];
    try {
      vectors = await Promise.all(
        query.texts.map((text) => this.options.embedder.embedQuery(text.slice(0, QUERY_MAX_CHARS))),
      );
    } catch {
      return {
        index: query.index,
        report: { status: "unavailable", pending: 0 },
        vectors: [],
        lexicalDepth: 0,
        scores: new Float64Array(0),
        closest: [],
        // Words alone.
        lexicalShare: { least: 1, slope: 0 },
      };
    }
    return this.similarities(vectors, query);
  }

  /** Stops syncing; the owner closes the embedder (shared with skill search), which ends a sync under way. */
  close(): Promise<void> {
    return this.background.close();
  }

  private similarities(
    queries: readonly Float32Array[],
    { index, candidates }: SemanticQuery,
  ): SemanticEvidence {
    const { pack, docOf } = this.positionsIn(index);
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
    const scores = new Float64Array(index.docs.length).fill(Number.NaN);
    const evidence = {
      index,
      report: { status: pending > 0 ? "partial" : "ready", pending },
      vectors: queries,
      lexicalDepth: DEPTH,
      lexicalShare: { least: this.options.weight, slope: ADAPTIVE_SLOPE },
    } as const;
    if (withVector === 0) return { ...evidence, scores, closest: [] };

    // A tool is as close to the request as to the nearest of its texts.
    const cosine = queries.length > 0 ? pack.scan.bestScores(queries) : new Float32Array(pack.scan.count);
    for (let v = 0; v < mask.length; v++)
      if (mask[v] === 1) scores[docOf[v] as number] = semanticScoreOf(cosine[v] as number);
    const closest = pack.scan.best(cosine, DEPTH, mask).map(({ doc: v }) => docOf[v] as number);
    return { ...evidence, scores, closest };
  }

  private positionsIn(index: SearchIndex): { pack: PackedVectors; docOf: Int32Array } {
    const pack = this.vectors.pack();
    const known = this.positions.get(index);
    if (known && known.pack === pack) return known;
    const docOf = new Int32Array(pack.keys.length).fill(-1);
    pack.keys.forEach((key, v) => {
      const first = index.byName.get(key.name);
      if (first === undefined) return;
      for (let d = first; d < index.docs.length && index.docs[d]?.name === key.name; d++)
        if (index.docs[d]?.owner === key.owner) {
          docOf[v] = d;
          break;
        }
    });
    const entry = { pack, docOf };
    this.positions.set(index, entry);
    return entry;
  }
}

/** A cosine as a semantic score in [0, 1] (COSINE_FLOOR → 0, COSINE_CEILING → 1). */
export function semanticScoreOf(cosine: number): number {
  return Math.min(1, Math.max(0, (cosine - COSINE_FLOOR) / (COSINE_CEILING - COSINE_FLOOR)));
}
