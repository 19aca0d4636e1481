import type { Db } from "../database/sqlite.ts";
import type { SearchIndex } from "../discovery/index.ts";
import { LruCache } from "../lru.ts";
import type { SemanticEvidence, SemanticQuery, VectorDocs } from "../search/evidence.ts";
import { FUSION_DEPTH } from "../search/hybrid.ts";
import type { SemanticReport, SemanticTier } from "../search/scores.ts";
import type { SkillWordIndex } from "../skills/index.ts";
import { BackgroundSync, type BackgroundSyncOptions } from "./background-sync.ts";
import { type ScoreCalibration, semanticScoreOf } from "./calibration.ts";
import type { QueryEmbedder } from "./embedder.ts";
import { type Eligible, eligibleOf, type NearDoc, nearest } from "./nearest.ts";
import { type RequestMeaning, requestMeaning } from "./request-meaning.ts";
import { TOOL_TEXT_VERSION } from "./text.ts";
import { MAX_QUERIES } from "./vector-slab.ts";
import { TextVectors, type ToolText, type VectorTable } from "./vectors.ts";

/**
 * Trust the words more when they matched well: the lexical share is weight + ADAPTIVE_SLOPE × the best
 * lexical score of the query. Chosen with bench/semantic.ts on even-position public queries (base 0.3,
 * slope 0.4: the best mean R@5 keeping every set at or above lexical-only), reported on the odd ones.
 */
const ADAPTIVE_SLOPE = 0.4;

export interface SemanticSearchOptions extends BackgroundSyncOptions {
  readonly db: Db;
  readonly embedder: QueryEmbedder;
  /** Where the catalog's vectors are stored (one table per catalog: tools, skills). */
  readonly table: VectorTable;
  /** How the catalog's texts are made (e.g. TOOL_TEXT_VERSION): a new recipe re-embeds. */
  readonly textVersion?: string;
  /**
   * The lexical share of a fused score when the words matched nothing well (config
   * `tool_search.semantic.weight`, shared by tools and skills); it grows by ADAPTIVE_SLOPE per unit of
   * the query's best lexical score.
   */
  readonly weight: number;
  /** How long a search waits for its request's vectors (config `tool_search.semantic.max_wait_ms`). */
  readonly maxWaitMs: number;
  /**
   * How cosines become scores; default the embedder's (its model's calibration.json), and its static
   * tier's (static/calibration.json). The calibration bench scores with the curves it is fitting.
   */
  readonly calibration?: ScoreCalibration;
  readonly staticCalibration?: ScoreCalibration;
  /** Each request's meaning as it was read (which tier, how many texts the model missed): the meter. */
  readonly onMeaning?: (meaning: RequestMeaning) => void;
}

/** Each doc's slot in the vector slab (-1: none yet), and how far into the slab's change log it is. */
interface DocSlots {
  readonly slots: Int32Array;
  epoch: number;
  next: number;
  /**
   * The eligible docs of each caller mask (visible sets are kept per build: a few shapes, not one per
   * call; the key EVERY stands for no mask), made again once the slots changed.
   */
  readonly byMask: WeakMap<Uint8Array, MaskState>;
}

interface MaskState {
  /** The slots' version it was made at (epoch and change-log position). */
  readonly at: number;
  readonly eligible: Eligible;
  /** Names the mask in the keys of the nearest docs kept (SemanticSearch.kept). */
  readonly id: number;
}

/** Requests whose nearest docs are kept (agents ask the same things again and again). */
const NEAREST_KEPT = 2_048;

/** The eligible-docs key of a search without a caller mask. */
const EVERY = new Uint8Array(0);

/**
 * Semantic ranking of one catalog (tools, or skills): keeps each doc's vector up to date in the
 * background (TextVectors, the embedding off the event loop in the embedder's worker) and gives a
 * request its evidence — the docs it may find that are closest in meaning, and any such doc's
 * similarity on demand — which the search fuses with the lexical scores (src/search/fusion.ts). Docs
 * whose vector is not computed yet are ranked lexically, and the search says how many
 * (SemanticReport); so are requests whose vectors were not ready within `maxWaitMs`.
 */
export class SemanticSearch<Index extends VectorDocs> {
  private readonly vectors: TextVectors;
  private readonly background: BackgroundSync;
  /** The catalog's newest index, whose docs the background sync is bringing vectors for. */
  private newest: Index | undefined;
  private readonly docSlots = new WeakMap<Index, DocSlots>();
  /** The nearest docs of requests asked lately, by mask and texts; valid for the mask state they were made in. */
  private readonly kept = new LruCache<
    string,
    { readonly mask: MaskState; readonly near: readonly NearDoc[] }
  >(NEAREST_KEPT);
  private masksMade = 0;
  private readonly calibration: ScoreCalibration;
  /** How the static tier's cosines become scores (its folder's curve). */
  private readonly staticCalibration: ScoreCalibration;

  constructor(private readonly options: SemanticSearchOptions) {
    this.calibration = options.calibration ?? options.embedder.calibration;
    this.staticCalibration =
      options.staticCalibration ?? options.embedder.staticTier?.calibration ?? this.calibration;
    this.vectors = new TextVectors(options.db, options.embedder, options.table, options.textVersion);
    this.background = new BackgroundSync(this.vectors, options);
  }

  /**
   * The catalog changed: `texts` lists every doc's text as it is now (read when the sync starts), and
   * their vectors are synced shortly. `index`, when the catalog has built one for the change, is what
   * `progress` reports on.
   */
  catalogChanged(index: Index | undefined, texts: () => readonly ToolText[]): void {
    if (index) this.newest = index;
    this.background.changed(texts);
  }

  /** How many docs of the newest index still wait for their vector (readiness probes, logs). */
  progress(): { status: "ready" | "partial"; pending: number } {
    let pending = 0;
    if (this.newest) for (const slot of this.docSlotsOf(this.newest).slots) if (slot < 0) pending++;
    return { status: pending > 0 ? "partial" : "ready", pending };
  }

  /** Resolves when every doc the catalog listed last has its vector (tests, benches). */
  settled(): Promise<void> {
    return this.background.settled();
  }

  /**
   * The evidence for one request (the catalog's meaningOf: the request, or each of its intents, and
   * the docs it may find): the texts' vectors (cached, or embedded within the wait), the closest docs
   * among those it may find, scored exactly, and any such doc's score when the search asks.
   */
  async evidence(query: SemanticQuery<Index>): Promise<SemanticEvidence<Index>> {
    const texts = query.texts.slice(0, MAX_QUERIES);
    const meaning = await requestMeaning(
      this.options.embedder,
      texts,
      this.options.maxWaitMs,
      query.wordsScore,
    );
    const { vectors, late, tier } = meaning;
    this.options.onMeaning?.(meaning);
    const calibration = tier === "static" ? this.staticCalibration : this.calibration;
    const { index } = query;
    const allowed = query.candidates?.allowed;
    const docSlots = this.docSlotsOf(index);
    const lexicalShare = { least: this.options.weight, slope: ADAPTIVE_SLOPE } as const;
    const wordsOnly = (report: SemanticReport): SemanticEvidence<Index> => ({
      query,
      index,
      report,
      vectors,
      lexicalDepth: 0,
      closest: [],
      scoreOf: () => Number.NaN,
      lexicalShare: { least: 1, slope: 0 },
    });
    if (vectors.length === 0)
      return wordsOnly(
        late > 0
          ? { status: "partial", tier, pending: 0, textsPending: late }
          : { status: "unavailable", tier, pending: 0, textsPending: 0 },
      );
    const mask = this.maskState(docSlots, allowed);
    const withVector = mask.eligible.docs.length;
    const near = this.nearestOf(mask, tier, texts, vectors, late);
    const { slots } = docSlots;
    const visibleCount = query.candidates ? query.candidates.count : index.docCount;
    const pending = Math.max(0, visibleCount - withVector);
    const report: SemanticReport = {
      status: pending > 0 || late > 0 ? "partial" : "ready",
      tier,
      pending,
      textsPending: late,
    };
    if (withVector === 0) return wordsOnly({ ...report, tier: "none" });
    const scores = new Map<number, number>(
      near.map(({ doc, cosine }) => [doc, semanticScoreOf(cosine, calibration)]),
    );
    return {
      query,
      index,
      report,
      vectors,
      lexicalDepth: FUSION_DEPTH,
      closest: near.map(({ doc }) => doc),
      lexicalShare,
      scoreOf: (doc) => {
        const known = scores.get(doc);
        if (known !== undefined) return known;
        const score = this.exactScore(index, slots, allowed, vectors, doc, calibration);
        scores.set(doc, score);
        return score;
      },
    };
  }

  /** Stops syncing; the owner closes the embedder (shared by the catalogs), which ends a sync under way. */
  close(): Promise<void> {
    return this.background.close();
  }

  /** A doc's semantic score, exactly; NaN when it is not findable or has no vector. */
  private exactScore(
    index: Index,
    slots: Int32Array,
    allowed: Uint8Array | undefined,
    vectors: readonly Float32Array[],
    doc: number,
    calibration: ScoreCalibration,
  ): number {
    const slot = slots[doc] ?? -1;
    if (slot < 0 || doc >= index.docCount || (allowed !== undefined && allowed[doc] !== 1)) return Number.NaN;
    // The slot may have changed hands since the mapping was read (a sync between evidence and fusion).
    if (this.vectors.slotOf(index.ownerOf(doc), index.nameOf(doc)) !== slot) return Number.NaN;
    return semanticScoreOf(this.vectors.slab.exact(slot, vectors), calibration);
  }

  /**
   * Each doc's slot in the slab, kept per index: mapped whole once, then brought up to date with the
   * slots changed since (a sync adding vectors), so a search does not map every doc again.
   */
  private docSlotsOf(index: Index): DocSlots {
    const known = this.docSlots.get(index);
    const epoch = this.vectors.epoch;
    if (known === undefined || known.epoch !== epoch) {
      const slots = new Int32Array(index.docCount);
      for (let doc = 0; doc < slots.length; doc++)
        slots[doc] = this.vectors.slotOf(index.ownerOf(doc), index.nameOf(doc)) ?? -1;
      const made: DocSlots = { slots, epoch, next: this.vectors.changeMark, byMask: new WeakMap() };
      this.docSlots.set(index, made);
      return made;
    }
    const { changes, next } = this.vectors.changesSince(known.next);
    for (const change of changes)
      for (const doc of index.docsNamed(change.name))
        if (index.ownerOf(doc) === change.owner) known.slots[doc] = change.slot;
    known.next = next;
    return known;
  }

  /** What is kept for the docs of `allowed` (all, without a mask): until the slots change. */
  private maskState(docSlots: DocSlots, allowed: Uint8Array | undefined): MaskState {
    const key = allowed ?? EVERY;
    const at = docSlots.epoch * 2 ** 32 + docSlots.next;
    const known = docSlots.byMask.get(key);
    if (known?.at === at) return known;
    const made = { at, eligible: eligibleOf(docSlots.slots, allowed), id: this.masksMade++ };
    docSlots.byMask.set(key, made);
    return made;
  }

  /**
   * The nearest eligible docs to the request's vectors: kept for the next time the same texts are
   * asked under the same mask, when every text had its vector (else they are those of some texts).
   */
  private nearestOf(
    mask: MaskState,
    tier: SemanticTier,
    texts: readonly string[],
    vectors: readonly Float32Array[],
    late: number,
  ): readonly NearDoc[] {
    const key = `${mask.id}\u0000${tier}\u0000${texts.join("\u0000")}`;
    const known = this.kept.get(key);
    if (known?.mask === mask) return known.near;
    const slab = this.vectors.slab;
    const near = nearest(slab, slab.scan(vectors), vectors, mask.eligible, FUSION_DEPTH);
    if (late === 0 && vectors.length === texts.length) this.kept.set(key, { mask, near });
    return near;
  }
}

type CatalogOptions = Omit<SemanticSearchOptions, "table" | "textVersion">;

/** Semantic search over tools: vectors in semantic_tool_vectors, made by the tool text recipe (text.ts). */
export function semanticToolSearch(options: CatalogOptions): SemanticSearch<SearchIndex> {
  return new SemanticSearch({ ...options, table: "semantic_tool_vectors", textVersion: TOOL_TEXT_VERSION });
}

/** Semantic search over skills: vectors in semantic_skill_vectors. */
export function semanticSkillSearch(options: CatalogOptions): SemanticSearch<SkillWordIndex> {
  return new SemanticSearch({ ...options, table: "semantic_skill_vectors" });
}
