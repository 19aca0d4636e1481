import type { Db } from "../database/sqlite.ts";
import type { SkillSemanticFusion } from "../skills/index.ts";
import { BackgroundSync, type BackgroundSyncOptions } from "./background-sync.ts";
import { semanticScoreOf } from "./calibration.ts";
import type { QueryEmbedder } from "./embedder.ts";
import { type Eligible, eligibleOf, nearest } from "./nearest.ts";
import { queryVectors } from "./query-wait.ts";
import { ADAPTIVE_SLOPE } from "./tool-search.ts";
import { TextVectors, type ToolText } from "./vectors.ts";

/** Skills closest in meaning read per query (the skill search asks for fewer). */
const CLOSEST = 40;

/** A skill as its vector is computed: id, content hash, and the text to embed. */
export interface SkillText {
  readonly id: string;
  readonly hash: string;
  readonly text: string;
}

export interface SemanticSkillSearchOptions extends BackgroundSyncOptions {
  readonly db: Db;
  readonly embedder: QueryEmbedder;
  /** The least lexical share of a fused score (config `tool_search.semantic.weight`, shared with tools). */
  readonly weight: number;
  /** How long a search waits for its query's vector (config `tool_search.semantic.max_wait_ms`). */
  readonly maxWaitMs: number;
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
  /** Every skill with a vector: ids and eligible docs side by side, made again after a change. */
  private mapped:
    | { readonly ids: readonly string[]; readonly eligible: Eligible; readonly mark: string }
    | undefined;

  constructor(private readonly options: SemanticSkillSearchOptions) {
    this.vectors = new TextVectors(options.db, options.embedder, "semantic_skill_vectors");
    this.background = new BackgroundSync(this.vectors, options);
  }

  /** The skills changed (a pack loaded); `skills` lists them all as they are now. */
  skillsChanged(skills: () => readonly SkillText[]): void {
    this.background.changed((): ToolText[] => {
      const now = skills();
      this.expected = now.length;
      return now.map((s) => ({ owner: "", name: s.id, hash: s.hash, text: () => s.text }));
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
    const { vectors, late } = await queryVectors(this.options.embedder, [text], this.options.maxWaitMs);
    const query = vectors[0];
    if (query === undefined) return { ...UNAVAILABLE, textsPending: late };
    const { ids, eligible } = this.skillSlots();
    const slab = this.vectors.slab;
    const { calibration } = this.options.embedder;
    const closest =
      ids.length === 0
        ? []
        : nearest(slab, slab.scan([query]), [query], eligible, CLOSEST).map(({ doc, cosine }) => ({
            id: ids[doc] ?? "",
            score: semanticScoreOf(cosine, calibration),
          }));
    const weight = this.options.weight;
    return {
      available: true,
      textsPending: 0,
      vector: query,
      complete: this.expected !== undefined && this.vectors.size >= this.expected,
      closest: (k) => closest.slice(0, k),
      scoreOf: (id) => {
        const slot = this.vectors.slotOf("", id);
        return slot === undefined ? undefined : semanticScoreOf(slab.exact(slot, [query]), calibration);
      },
      lexicalShare: (bestLexical) => Math.min(1, weight + ADAPTIVE_SLOPE * bestLexical),
    };
  }

  /** Every skill with a vector: its id, and as an eligible doc (its position) with its slot. */
  private skillSlots(): { readonly ids: readonly string[]; readonly eligible: Eligible } {
    const mark = `${this.vectors.epoch}:${this.vectors.changeMark}`;
    if (this.mapped?.mark !== mark) {
      const entries = [...this.vectors.entries()];
      this.mapped = {
        ids: entries.map((e) => e.name),
        eligible: eligibleOf(
          Int32Array.from(entries, (e) => e.slot),
          undefined,
        ),
        mark,
      };
    }
    return this.mapped;
  }
}

const UNAVAILABLE: SkillSemanticFusion = {
  available: false,
  textsPending: 0,
  complete: false,
  closest: () => [],
  scoreOf: () => undefined,
  lexicalShare: () => 1,
};
