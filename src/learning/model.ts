import { analyze } from "../search/text.ts";
import { VectorSlab } from "../semantic/vector-slab.ts";

/** One request that led (or misled) this tenant to one tool, with the weight its choices gave it. */
export interface LearnedRequest {
  readonly tool: string;
  readonly request: string;
  /** Summed over principals, each capped; > 0 favours the tool for such requests, < 0 disfavours it. */
  readonly weight: number;
}

/**
 * How a request's similarity to a learned one is read: cosines at or below the floor say nothing,
 * at the ceiling everything. Meaning weighs `meaningShare`, shared words the rest. Chosen on the even
 * half of the public sets, training on every other even request and testing on the others.
 */
const MEANING = { floor: 0.5, ceiling: 0.9, share: 0.6 } as const;
/** A weight of this size (one choice) makes a learned request count in full. */
const FULL_WEIGHT = 1;

interface Entry {
  tool: string;
  /** Position of `tool` in TenantModel.tools, so scoring adds into arrays rather than maps. */
  toolId: number;
  request: string;
  weight: number;
  /** The request's analysed words, each once. */
  terms: readonly string[];
  vector: Float32Array | undefined;
}

/**
 * One tenant's learned requests, searched by words (the share of the request's word weight a learned
 * request holds) and by meaning (cosine of their vectors). A tool's learned score for a request is
 * its best learned request's similarity times that request's confidence (its weight, saturating at one
 * choice); disfavoured requests subtract the same way. Entries change in place as feedback arrives.
 */
export class TenantModel {
  private readonly entries: Entry[] = [];
  private readonly byKey = new Map<string, number>();
  private readonly byRequest = new Map<string, number[]>();
  private readonly tools: string[] = [];
  private readonly toolIds = new Map<string, number>();
  private readonly postings = new Map<string, number[]>();
  /** Requests of live entries that have no vector yet. */
  private readonly withoutVector = new Set<string>();
  /**
   * Each distinct learned request's vector in one slab (a request learned for several tools is there
   * once): a search scans it once, then scores exactly only the requests near enough to count.
   */
  private slab: VectorSlab | undefined;
  /** The entries of each slot's request. */
  private readonly entriesOfSlot: number[][] = [];
  private readonly slotOfRequest = new Map<string, number>();

  get size(): number {
    return this.byKey.size;
  }

  /** Sets the weight of (tool, request); 0 forgets it. */
  set(entry: LearnedRequest): void {
    const key = keyOf(entry.tool, entry.request);
    const at = this.byKey.get(key);
    if (at !== undefined) {
      const known = this.entries[at] as Entry;
      known.weight = entry.weight;
      if (entry.weight === 0) {
        this.byKey.delete(key);
        if (!this.needsVector(entry.request)) this.withoutVector.delete(entry.request);
      }
      return;
    }
    if (entry.weight === 0) return;
    const terms = [...new Set(analyze(entry.request))];
    const id = this.entries.length;
    let toolId = this.toolIds.get(entry.tool);
    if (toolId === undefined) {
      toolId = this.tools.length;
      this.tools.push(entry.tool);
      this.toolIds.set(entry.tool, toolId);
    }
    // One literal shape for every entry, so the scoring loop's property reads stay monomorphic.
    const added: Entry = {
      tool: entry.tool,
      toolId,
      request: entry.request,
      weight: entry.weight,
      terms,
      vector: undefined,
    };
    this.entries.push(added);
    this.byKey.set(key, id);
    const same = this.byRequest.get(entry.request);
    if (same) same.push(id);
    else this.byRequest.set(entry.request, [id]);
    for (const term of terms) {
      const list = this.postings.get(term);
      if (list) list.push(id);
      else this.postings.set(term, [id]);
    }
    this.withoutVector.add(entry.request);
  }

  /** Gives every entry of `request` its vector (the same text, whatever the tool). */
  setVector(request: string, vector: Float32Array): void {
    let slot = this.slotOfRequest.get(request);
    if (slot === undefined) {
      this.slab ??= new VectorSlab(vector.length);
      slot = this.slab.add(vector);
      this.slotOfRequest.set(request, slot);
      this.entriesOfSlot[slot] = [];
    }
    const ofSlot = this.entriesOfSlot[slot] as number[];
    for (const id of this.byRequest.get(request) ?? []) {
      const entry = this.entries[id] as Entry;
      if (entry.vector !== undefined) continue;
      entry.vector = vector;
      ofSlot.push(id);
    }
    this.withoutVector.delete(request);
  }

  /** The requests still without a vector (kept as entries change: every search asks). */
  unembedded(): string[] {
    return [...this.withoutVector];
  }

  /** Whether a live entry of `request` still lacks its vector. */
  private needsVector(request: string): boolean {
    return (this.byRequest.get(request) ?? []).some(
      (id) => this.entries[id]?.vector === undefined && this.entries[id]?.weight !== 0,
    );
  }

  /** Every learned request (for show and export), heaviest first. */
  list(): LearnedRequest[] {
    return [...this.byKey.values()]
      .map((id) => this.entries[id] as Entry)
      .map(({ tool, request, weight }) => ({ tool, request, weight }))
      .sort((a, b) => b.weight - a.weight || cmp(a.tool, b.tool) || cmp(a.request, b.request));
  }

  /**
   * Learned scores in [-1, 1] by tool for a request read as `terms` (analysed) and, when the model
   * runs, its meaning texts' `vectors`. Tools the tenant's choices said nothing about are absent.
   */
  scores(request: string, vectors: readonly Float32Array[]): Map<string, number> {
    const similarity = new Float64Array(this.entries.length);
    // Without the model, shared words are all there is to go by.
    this.byWords(request, similarity, vectors.length > 0 ? 1 - MEANING.share : 1);
    if (vectors.length > 0) this.byMeaning(vectors, similarity);
    const favour = new Float64Array(this.tools.length);
    const against = new Float64Array(this.tools.length);
    for (let id = 0; id < this.entries.length; id++) {
      const s = similarity[id] as number;
      const entry = this.entries[id] as Entry;
      // A forgotten entry keeps its place with weight 0.
      if (s <= 0 || entry.weight === 0) continue;
      const confidence = Math.min(1, Math.abs(entry.weight) / FULL_WEIGHT);
      const side = entry.weight > 0 ? favour : against;
      side[entry.toolId] = Math.max(side[entry.toolId] as number, s * confidence);
    }
    const out = new Map<string, number>();
    for (let t = 0; t < this.tools.length; t++) {
      const score = (favour[t] as number) - (against[t] as number);
      if (score !== 0) out.set(this.tools[t] as string, Math.max(-1, Math.min(1, score)));
    }
    return out;
  }

  /** Shared words: the share of the request's word weight (IDF over learned requests) an entry holds. */
  private byWords(request: string, similarity: Float64Array, share: number): void {
    const terms = [...new Set(analyze(request))];
    if (terms.length === 0) return;
    const n = this.entries.length;
    const idf = terms.map((t) => Math.log(1 + (n + 1) / ((this.postings.get(t)?.length ?? 0) + 0.5)));
    const total = idf.reduce((a, b) => a + b, 0);
    terms.forEach((term, i) => {
      const add = (share * (idf[i] as number)) / total;
      for (const id of this.postings.get(term) ?? []) similarity[id] = (similarity[id] as number) + add;
    });
  }

  /**
   * Meaning: each learned request's cosine with the nearest of the request's texts, read where it can
   * count — above MEANING.floor. The scan's approximations (within its bound of the exact cosine) pick
   * those; they are then scored exactly.
   */
  private byMeaning(vectors: readonly Float32Array[], similarity: Float64Array): void {
    const slab = this.slab;
    if (slab === undefined || slab.slots === 0) return;
    const { approximate, bound } = slab.scan(vectors);
    for (let slot = 0; slot < slab.slots; slot++) {
      if ((approximate[slot] as number) + bound <= MEANING.floor) continue;
      const cosine = slab.exact(slot, vectors);
      const s = Math.min(1, Math.max(0, (cosine - MEANING.floor) / (MEANING.ceiling - MEANING.floor)));
      if (s <= 0) continue;
      for (const id of this.entriesOfSlot[slot] ?? [])
        similarity[id] = (similarity[id] as number) + MEANING.share * s;
    }
  }
}

function keyOf(tool: string, request: string): string {
  return `${tool}\u0000${request}`;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
