import type { Db } from "../database/sqlite.ts";
import type { SkillSemanticFusion } from "../skills/index.ts";
import { BackgroundSync, type BackgroundSyncOptions } from "./background-sync.ts";
import type { TextEmbedder } from "./embedder.ts";
import { ADAPTIVE_SLOPE, QUERY_MAX_CHARS, semanticScoreOf } from "./tool-search.ts";
import { type PackedVectors, TextVectors, type ToolText } from "./vectors.ts";

/** A skill as its vector is computed: id, content hash, and the text to embed. */
export interface SkillText {
  readonly id: string;
  readonly hash: string;
  readonly text: string;
}

export interface SemanticSkillSearchOptions extends BackgroundSyncOptions {
  readonly db: Db;
  readonly embedder: TextEmbedder & { embedQuery(text: string): Promise<Float32Array> };
  /** The least lexical share of a fused score (config `tool_search.semantic.weight`, shared with tools). */
  readonly weight: number;
}

/**
 * Semantic ranking of skills, as SemanticToolSearch does for tools: each skill's vector (title,
 * description and trigger) kept up to date in the background, and per query a SkillSemanticFusion
 * that the skill search fuses with its words, over the skills the caller may see.
 */
export class SemanticSkillSearch {
  private readonly vectors: TextVectors;
  private readonly background: BackgroundSync;
  /** How many skills the newest sync was for; undefined until one started. */
  private expected: number | undefined;
  private readonly positions = new WeakMap<PackedVectors, ReadonlyMap<string, number>>();

  constructor(private readonly options: SemanticSkillSearchOptions) {
    this.vectors = new TextVectors(options.db, options.embedder, "semantic_skill_vectors");
    this.background = new BackgroundSync(this.vectors, options);
  }

  /** The skills changed (a pack loaded); `skills` lists them all as they are now. */
  skillsChanged(skills: () => readonly SkillText[]): void {
    this.background.changed((): ToolText[] => {
      const now = skills();
      this.expected = now.length;
      return now.map((s) => ({ owner: "", name: s.id, hash: s.hash, text: s.text }));
    });
  }

  settled(): Promise<void> {
    return this.background.settled();
  }

  /** Stops syncing; the owner closes the embedder (shared with tool search). */
  close(): Promise<void> {
    return this.background.close();
  }

  async forQuery(text: string): Promise<SkillSemanticFusion> {
    let query: Float32Array;
    try {
      query = await this.options.embedder.embedQuery(text.slice(0, QUERY_MAX_CHARS));
    } catch {
      return UNAVAILABLE;
    }
    // Scored when the search first asks, in the same turn as the search: the scan's buffer is shared.
    const pack = this.vectors.pack();
    const positions = this.positionsOf(pack);
    let cosine: Float32Array | undefined;
    const scores = () => {
      cosine ??= Float32Array.from(pack.scan.scores(query));
      return cosine;
    };
    const weight = this.options.weight;
    return {
      available: true,
      vector: query,
      complete: this.expected !== undefined && this.vectors.size >= this.expected,
      closest: (k) =>
        pack.scan
          .best(scores(), k)
          .map(({ doc, score }) => ({ id: pack.keys[doc]?.name ?? "", score: semanticScoreOf(score) })),
      scoreOf: (id) => {
        const at = positions.get(id);
        return at === undefined ? undefined : semanticScoreOf(scores()[at] as number);
      },
      lexicalShare: (bestLexical) => Math.min(1, weight + ADAPTIVE_SLOPE * bestLexical),
    };
  }

  private positionsOf(pack: PackedVectors): ReadonlyMap<string, number> {
    let positions = this.positions.get(pack);
    if (!positions) {
      positions = new Map(pack.keys.map((key, i) => [key.name, i]));
      this.positions.set(pack, positions);
    }
    return positions;
  }
}

const UNAVAILABLE: SkillSemanticFusion = {
  available: false,
  complete: false,
  closest: () => [],
  scoreOf: () => undefined,
  lexicalShare: () => 1,
};
