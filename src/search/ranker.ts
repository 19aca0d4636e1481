/**
 * In-memory BM25F ranker over docs of weighted fields: the index every FTS search of tools and skills
 * runs on (nothing is searched in SQLite). A catalog rebuilds it from its records after a change, in
 * slices (see `Ranker.steps`). Corpus statistics (N, df) are taken over the caller's visible docs only,
 * and field lengths are normalised per owner (see buildPostingIndex), so another tenant's docs cannot
 * shift the scores of the docs a caller sees.
 *
 * Over 500 lines because one query's scoring (AND → OR → fuzzy widening, proximity, feedback terms)
 * shares the scratch buffers below; the index build is in ranker-index.ts, the reading of unknown
 * words in ranker-words.ts, what a ranker is tuned with, asked and answers in ranker-options.ts.
 */

import { LruCache } from "../lru.ts";
import { buildPostingIndex, type PostingIndex, type Postings } from "./ranker-index.ts";
import type {
  Candidates,
  RankedDoc,
  RankerConfig,
  RankOptions,
  RankResult,
  WordRepair,
} from "./ranker-options.ts";
import { type Expansion, expansionsOf, spellRepair } from "./ranker-words.ts";

const SHORT_QUERY_WORDS = 4;
/** Postings one scoring pass reads at most (withinBudget). */
const MAX_SCORED_POSTINGS = 100_000;

interface QueryTerm {
  readonly id: number;
  readonly weight: number;
  /** Index of the query word this term stands for (fuzzy expansions share it). */
  readonly slot: number;
  readonly fuzzy: boolean;
}

export class Ranker {
  private readonly vocab: ReadonlyMap<string, number>;
  private readonly terms: readonly string[];
  private readonly postings: Postings;
  private readonly scores: Float64Array;
  /** Distinct query words matched per doc. */
  private readonly covered: Uint16Array;
  private readonly lastSlot: Int32Array;
  private readonly stamp: Uint32Array;
  /** Docs the current query touched, in first-touch order: a scratch buffer, not a per-query array. */
  private readonly touched: Int32Array;
  private touchedCount = 0;
  private epoch = 0;
  /** Term ids by first character, each list sorted by term length: where fuzzy expansion looks. */
  private readonly firstChar: ReadonlyMap<string, Int32Array>;
  /** Unknown words' expansions, bounded: a flood of unique typos keeps only the recent ones. */
  private readonly expansions = new LruCache<string, Expansion[]>(10_000);
  /** Docs holding a known word of the current query (stamped with `knownEpoch`): for co-occurrence. */
  private readonly knownStamp: Uint32Array;
  private knownEpoch = 0;
  /** Forward index (CSR): per doc, its term ids and their saturated weights; phrases left out. */
  private readonly fwdStart: Int32Array;
  private readonly fwdTerm: Int32Array;
  private readonly fwdSat: Float32Array;
  /** PRF scratch: accumulated expansion weight per term, stamped per query. */
  private prfAcc = new Float64Array(0);
  private prfCount = new Uint16Array(0);
  private prfStamp = new Uint32Array(0);

  private constructor(
    postingIndex: PostingIndex,
    /** Tie-break position of each doc (lower wins on equal relevance). */
    private readonly tieRank: Int32Array,
    private readonly config: RankerConfig,
  ) {
    ({
      vocab: this.vocab,
      terms: this.terms,
      postings: this.postings,
      fwdStart: this.fwdStart,
      fwdTerm: this.fwdTerm,
      fwdSat: this.fwdSat,
      firstChar: this.firstChar,
    } = postingIndex);
    const n = tieRank.length;
    this.scores = new Float64Array(n);
    this.covered = new Uint16Array(n);
    this.lastSlot = new Int32Array(n);
    this.stamp = new Uint32Array(n);
    this.touched = new Int32Array(n);
    this.knownStamp = new Uint32Array(n);
  }

  /**
   * Builds a ranker over `docs` (per doc, its analysed terms per field; `owners`: per doc its owner
   * partition, 0 = global, see buildPostingIndex) as a generator that yields between small groups of
   * docs and terms: about a second of work at 10,000 tools, which the catalog runs in slices between
   * other calls.
   */
  static *steps(
    docs: readonly (readonly string[][])[],
    tieRank: Int32Array,
    config: RankerConfig,
    owners?: Int32Array,
  ): Generator<void, Ranker> {
    return new Ranker(yield* buildPostingIndex(docs, config, owners), tieRank, config);
  }

  get size(): number {
    return this.scores.length;
  }

  /** Ranks docs for analysed query words (unique, in query order). */
  rank(words: readonly string[], opts: RankOptions): RankResult {
    // Unknown words are repaired when they are a few edits from a vocabulary word (always: one
    // misspelled word among correct ones is common). Reading them by prefix or as abbreviations is
    // riskier: done for short queries ("send msg"), and for long ones only when too little matched,
    // since there unknown words are usually names the catalog lacks.
    let fuzzyUsed = false;
    const repairs = new Map<number, WordRepair>();
    const known = this.markKnownDocs(words, opts.candidates);
    const readingsUsed: WordRepair[] = [];
    const build = (anyExpansion: boolean): QueryTerm[] => {
      const terms: QueryTerm[] = [];
      repairs.clear();
      readingsUsed.length = 0;
      words.forEach((w, slot) => {
        // A word only hidden tools have is unknown to this caller: repaired like any unknown word,
        // so whether another tenant's catalog holds it changes nothing the caller sees.
        const id = this.visibleId(w, opts.candidates);
        const qw = opts.wordWeights?.[slot] ?? 1;
        for (const reading of opts.readings?.[slot] ?? []) {
          const ids = this.visibleTerms(reading.terms, opts.candidates);
          for (const rid of ids)
            terms.push({ id: rid, weight: (qw * reading.weight) / reading.terms.length, slot, fuzzy: false });
          if (ids.length > 0) readingsUsed.push({ word: w, term: reading.words, kind: "synonym" });
        }
        if (id !== undefined) {
          terms.push({ id, weight: qw, slot, fuzzy: false });
          return;
        }
        const expansions = this.slotExpansions(slot, w, opts, known).filter(
          (e) => anyExpansion || e.kind === "typo",
        );
        for (const e of expansions) {
          const discount = e.kind === "typo" ? this.config.typoWeight : this.config.fuzzyWeight;
          terms.push({ id: e.id, weight: qw * e.weight * discount, slot, fuzzy: true });
          fuzzyUsed = true;
        }
        const best = expansions[0];
        if (best) {
          const term = this.terms[best.id] ?? "";
          const spelled = best.kind === "typo" ? spellRepair(opts.surfaces?.[slot] ?? w, term) : term;
          repairs.set(slot, { word: w, term: spelled, kind: best.kind });
        }
      });
      for (const ph of opts.phrases ?? []) {
        const id = this.visibleId(ph, opts.candidates);
        if (id !== undefined) terms.push({ id, weight: 1, slot: -1, fuzzy: false });
      }
      return terms;
    };
    let terms = build(words.length <= SHORT_QUERY_WORDS);
    this.score(terms, opts.candidates);
    // Too few hits: let unknown words of a long query widen too.
    const fill = this.config.fillWithFuzzy ? opts.limit : 1;
    if (
      this.touchedCount < fill &&
      words.length > SHORT_QUERY_WORDS &&
      words.some((w) => !this.vocab.has(w))
    ) {
      terms = build(true);
      this.score(terms, opts.candidates);
    }
    const slots = words.length;
    const full = slots;
    let allCount = 0;
    for (let i = 0; i < this.touchedCount; i++) if (this.covered[this.touched[i] ?? 0] === full) allCount++;
    const andOnly = allCount >= opts.limit && slots > 1;
    const select = (limit: number): RankedDoc[] => {
      const coord = this.config.coordination;
      const out: RankedDoc[] = [];
      for (let i = 0; i < this.touchedCount; i++) {
        const d = this.touched[i] ?? 0;
        const cov = this.covered[d] ?? 0;
        if (andOnly && cov !== full) continue;
        let rel = this.scores[d] ?? 0;
        if (coord > 0 && slots > 1) rel *= (cov / slots) ** coord;
        // Most touched docs do not make a full page: reject them before allocating an entry.
        const last = out.length >= limit ? out[limit - 1] : undefined;
        if (last && this.compareTo(last, d, rel) <= 0) continue;
        this.insertTop(out, { doc: d, relevance: rel, fuzzy: false }, limit);
      }
      return out;
    };
    const prf = this.config.prfDocs;
    if (prf > 0 && this.touchedCount > 1) {
      const feedback = select(prf);
      const extra = this.feedbackTerms(feedback, terms, opts.candidates);
      if (extra.length > 0) this.accumulate(extra, opts.candidates);
    }
    const top = select(opts.limit);
    if (fuzzyUsed)
      for (let i = 0; i < top.length; i++) {
        const r = top[i] as RankedDoc;
        if (this.usedFuzzy(r.doc, terms)) top[i] = { ...r, fuzzy: true };
      }
    if (opts.nameHits && opts.nameHits.length > 0) {
      const best = top.reduce((m, r) => Math.max(m, r.relevance), 0);
      const allowed = opts.candidates?.allowed;
      const hits = new Set(opts.nameHits.filter((d) => !allowed || allowed[d] === 1));
      const rest = top.filter((r) => !hits.has(r.doc));
      const boosted = [...hits].map((doc) => ({ doc, relevance: best + 1, fuzzy: false }));
      boosted.sort((a, b) => (this.tieRank[a.doc] ?? 0) - (this.tieRank[b.doc] ?? 0));
      top.length = 0;
      for (const r of [...boosted, ...rest]) if (top.length < opts.limit) top.push(r);
    }
    const strategy = fuzzyUsed
      ? "fuzzy"
      : andOnly || top.every((r) => this.covered[r.doc] === full)
        ? "and"
        : "or";
    return {
      docs: top,
      strategy,
      repairs: [...readingsUsed, ...repairs.values()],
      scale: this.scale(words, opts, known),
    };
  }

  /**
   * RankResult.scale: Σ over query words of idf × word weight × the saturated weight of one name
   * occurrence. A word outside the vocabulary counts at the idf of its best visible expansion (a typo
   * matched at a discount), else at the idf of a word no tool has — so words nothing matches lower
   * every score, and "delete the repo" over a catalog without one scores low, not 1.
   */
  private scale(words: readonly string[], opts: RankOptions, known: boolean): number {
    const { candidates } = opts;
    const n = candidates ? candidates.count : this.size;
    const idf = (df: number) => Math.log(1 + (n - df + 0.5) / (df + 0.5)) ** this.config.idfPower;
    const saturated = this.config.k1 + 1;
    let scale = 0;
    words.forEach((w, slot) => {
      const id = this.vocab.get(w);
      let wordIdf: number;
      if (id !== undefined && this.df(id, candidates) > 0) wordIdf = idf(this.df(id, candidates));
      else {
        // Read through its best visible stand-in: an abbreviation's words, else a typo repair.
        const readingIds = (opts.readings?.[slot] ?? []).flatMap((r) =>
          this.visibleTerms(r.terms, candidates),
        );
        const standIns = [...readingIds, ...this.slotExpansions(slot, w, opts, known).map((e) => e.id)];
        const best = standIns.reduce((most, sid) => Math.max(most, idf(this.df(sid, candidates))), 0);
        wordIdf = best > 0 ? best : idf(0);
      }
      scale += wordIdf * (opts.wordWeights?.[slot] ?? 1) * saturated;
    });
    return scale;
  }

  /**
   * Pseudo-relevance feedback (RM3-like): the terms that carry most weight in the first-pass top
   * docs, weighted by each doc's relevance share and the term's idf, excluding the query's own
   * terms and terms too common among the candidates.
   */
  private feedbackTerms(
    feedback: readonly RankedDoc[],
    terms: readonly QueryTerm[],
    candidates: Candidates | undefined,
  ): QueryTerm[] {
    const best = feedback[0]?.relevance ?? 0;
    if (best <= 0) return [];
    const vocabSize = this.terms.length;
    if (this.prfAcc.length !== vocabSize) {
      this.prfAcc = new Float64Array(vocabSize);
      this.prfCount = new Uint16Array(vocabSize);
      this.prfStamp = new Uint32Array(vocabSize);
    }
    const stamp = this.epoch;
    for (const t of terms) {
      this.prfStamp[t.id] = stamp;
      this.prfCount[t.id] = 65_535; // never selected
    }
    const seen: number[] = [];
    for (const r of feedback) {
      const w = r.relevance / best;
      const end = this.fwdStart[r.doc + 1] ?? 0;
      for (let i = this.fwdStart[r.doc] ?? 0; i < end; i++) {
        const id = this.fwdTerm[i] ?? 0;
        if (this.prfStamp[id] !== stamp) {
          this.prfStamp[id] = stamp;
          this.prfAcc[id] = 0;
          this.prfCount[id] = 0;
          seen.push(id);
        }
        if (this.prfCount[id] === 65_535) continue;
        this.prfAcc[id] = (this.prfAcc[id] ?? 0) + w * (this.fwdSat[i] ?? 0);
        this.prfCount[id] = (this.prfCount[id] ?? 0) + 1;
      }
    }
    const n = candidates ? candidates.count : this.size;
    const minDocs = Math.min(this.config.prfMinDocs, feedback.length);
    const maxDf = Math.max(1, this.config.prfMaxDf * n);
    const picked: [number, number][] = [];
    for (const id of seen) {
      if ((this.prfCount[id] ?? 0) < minDocs) continue;
      const df = this.df(id, candidates);
      if (df > maxDf || df < 2) continue;
      const value = (this.prfAcc[id] ?? 0) * Math.log(1 + (n - df + 0.5) / (df + 0.5));
      picked.push([id, value]);
    }
    picked.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    const chosen = picked.slice(0, this.config.prfTerms);
    const top = chosen[0]?.[1] ?? 0;
    if (top <= 0) return [];
    return chosen.map(([id, v]) => ({
      id,
      weight: (this.config.prfWeight * v) / top,
      slot: -1,
      fuzzy: false,
    }));
  }

  /** Adds terms to the current query's scores (same epoch), growing the touched list. */
  private accumulate(terms: readonly QueryTerm[], candidates: Candidates | undefined): void {
    const allowed = candidates?.allowed;
    const n = candidates ? candidates.count : this.size;
    const { start, docs, sat } = this.postings;
    for (const t of terms) {
      const df = this.df(t.id, candidates);
      if (df === 0) continue;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5)) ** this.config.idfPower * t.weight;
      const end = start[t.id + 1] ?? 0;
      for (let i = start[t.id] ?? 0; i < end; i++) {
        const d = docs[i] ?? 0;
        if (allowed && allowed[d] !== 1) continue;
        if (this.stamp[d] !== this.epoch) {
          this.stamp[d] = this.epoch;
          this.scores[d] = 0;
          this.covered[d] = 0;
          this.lastSlot[d] = -1;
          this.touched[this.touchedCount++] = d;
        }
        this.scores[d] = (this.scores[d] ?? 0) + idf * (sat[i] ?? 0);
        // Query-word coverage; expansion terms (slot -1) do not count.
        if (t.slot >= 0 && this.lastSlot[d] !== t.slot) {
          this.lastSlot[d] = t.slot;
          this.covered[d] = (this.covered[d] ?? 0) + 1;
        }
      }
    }
  }

  /** Scores terms in a new epoch: the touched list and per-doc sums start empty. */
  private score(terms: readonly QueryTerm[], candidates: Candidates | undefined): void {
    this.epoch++;
    this.touchedCount = 0;
    this.accumulate(
      this.withinBudget(terms, (t) => t.id),
      candidates,
    );
  }

  /**
   * The items (terms, words) whose postings add up to at most MAX_SCORED_POSTINGS, the rarest kept
   * first (the rarest always): a request of many common words over a large catalog would otherwise
   * read every doc once per word, and the commonest words add the least relevance. Below the budget,
   * every item in its order.
   */
  private withinBudget<T>(items: readonly T[], idOf: (item: T) => number | undefined): readonly T[] {
    const { start } = this.postings;
    const length = (item: T) => {
      const id = idOf(item);
      return id === undefined ? 0 : (start[id + 1] ?? 0) - (start[id] ?? 0);
    };
    let total = 0;
    for (const item of items) total += length(item);
    if (total <= MAX_SCORED_POSTINGS) return items;
    const kept = new Set<T>();
    let scored = 0;
    for (const item of [...items].sort((a, b) => length(a) - length(b))) {
      if (kept.size > 0 && scored + length(item) > MAX_SCORED_POSTINGS) break;
      kept.add(item);
      scored += length(item);
    }
    return items.filter((item) => kept.has(item));
  }

  private usedFuzzy(d: number, terms: readonly QueryTerm[]): boolean {
    const { start, docs } = this.postings;
    for (const t of terms)
      if (t.fuzzy && binarySearch(docs, start[t.id] ?? 0, (start[t.id + 1] ?? 0) - 1, d)) return true;
    return false;
  }

  /** Keeps `top` sorted best-first with at most `limit` entries. */
  private insertTop(top: RankedDoc[], item: RankedDoc, limit: number): void {
    let i = top.length;
    while (i > 0) {
      const prev = top[i - 1];
      if (!prev || this.compare(prev, item) <= 0) break;
      i--;
    }
    if (i >= limit) return;
    top.splice(i, 0, item);
    if (top.length > limit) top.pop();
  }

  /** Negative when a ranks before b. Tie-breaks only apply to (relatively) equal relevance. */
  compare(a: RankedDoc, b: RankedDoc): number {
    return this.compareTo(a, b.doc, b.relevance);
  }

  /** `compare` against a doc not yet wrapped in a RankedDoc. */
  private compareTo(a: RankedDoc, doc: number, relevance: number): number {
    const diff = relevance - a.relevance;
    if (Math.abs(diff) > 1e-9 * Math.max(Math.abs(a.relevance), Math.abs(relevance), 1e-12)) return diff;
    return (this.tieRank[a.doc] ?? 0) - (this.tieRank[doc] ?? 0);
  }

  /** Vocabulary terms close to an unknown word (typed as `surface`), with a similarity weight in (0, 1]. */
  private expand(word: string, surface: string): Expansion[] {
    const key = `${word}\u0000${surface}`;
    const memo = this.expansions.get(key);
    if (memo) return memo;
    const result = expansionsOf(word, surface, this.terms, this.firstChar);
    this.expansions.set(key, result);
    return result;
  }

  /** The visible expansions of query word `slot`, none when the caller marked it not repairable. */
  private slotExpansions(slot: number, word: string, opts: RankOptions, known: boolean): Expansion[] {
    if (opts.repairable?.[slot] === false) return [];
    return this.visibleExpansions(word, opts.surfaces?.[slot] ?? word, opts.candidates, known);
  }

  /**
   * Stamps the docs holding any known word of the query and says whether there were any: a repair
   * that co-occurs with the query's other words is likelier the intended one ("cmmit the staged
   * chnges": "commit", not "comment").
   */
  private markKnownDocs(words: readonly string[], candidates: Candidates | undefined): boolean {
    this.knownEpoch++;
    let any = false;
    const allowed = candidates?.allowed;
    const { start, docs } = this.postings;
    for (const w of this.withinBudget(words, (word) => this.vocab.get(word))) {
      const id = this.vocab.get(w);
      if (id === undefined) continue;
      const end = start[id + 1] ?? 0;
      for (let i = start[id] ?? 0; i < end; i++) {
        const d = docs[i] ?? 0;
        if (allowed && allowed[d] !== 1) continue;
        this.knownStamp[d] = this.knownEpoch;
        any = true;
      }
    }
    return any;
  }

  /**
   * The best typo repair of an unknown word among the candidates' vocabulary, spelled as a word
   * ("stauts" → "status"), or undefined: what the request is re-read with before it is embedded.
   */
  typoRepair(word: string, surface: string, candidates: Candidates | undefined): string | undefined {
    const best = this.visibleExpansions(word, surface, candidates, false).find((e) => e.kind === "typo");
    return best === undefined ? undefined : spellRepair(surface, this.terms[best.id] ?? "");
  }

  /** Whether a tool among the candidates has the term. */
  knows(term: string, candidates: Candidates | undefined): boolean {
    return this.visibleId(term, candidates) !== undefined;
  }

  /** The term's id when a tool the caller can see has it, else undefined (as for a word no tool has). */
  private visibleId(term: string, candidates: Candidates | undefined): number | undefined {
    const id = this.vocab.get(term);
    return id !== undefined && this.df(id, candidates) > 0 ? id : undefined;
  }

  /** Ids of the terms the caller's visible tools have (hidden vocabulary is never searched or reported). */
  private visibleTerms(terms: readonly string[], candidates: Candidates | undefined): number[] {
    const ids: number[] = [];
    for (const t of terms) {
      const id = this.vocab.get(t);
      if (id !== undefined && this.df(id, candidates) > 0) ids.push(id);
    }
    return ids;
  }

  /** Whether a term occurs in a doc that also holds a known word of the current query. */
  private cooccurs(id: number): boolean {
    const { start, docs } = this.postings;
    const end = start[id + 1] ?? 0;
    for (let i = start[id] ?? 0; i < end; i++)
      if (this.knownStamp[docs[i] ?? 0] === this.knownEpoch) return true;
    return false;
  }

  /**
   * The best expansions among terms the caller can see: ranked by similarity (discounted for a term
   * that never appears beside the query's known words, when it has some), then by visible document
   * frequency, so hidden tools neither take slots nor reorder them.
   */
  private visibleExpansions(
    word: string,
    surface: string,
    candidates: Candidates | undefined,
    known: boolean,
  ): Expansion[] {
    const visible: (Expansion & { df: number })[] = [];
    for (const e of this.expand(word, surface)) {
      const df = this.df(e.id, candidates);
      if (df === 0) continue;
      const weight = known && !this.cooccurs(e.id) ? e.weight * COOCCURRENCE_DISCOUNT : e.weight;
      visible.push({ ...e, weight, df });
    }
    visible.sort((a, b) => b.weight - a.weight || b.df - a.df || a.id - b.id);
    return visible.slice(0, 8).map(({ id, weight, kind }) => ({ id, weight, kind }));
  }

  /** Document frequency of a term over the candidates (counted once per set), else over every doc. */
  private df(id: number, candidates: Candidates | undefined): number {
    const { start, docs } = this.postings;
    const from = start[id] ?? 0;
    const end = start[id + 1] ?? 0;
    if (!candidates) return end - from;
    candidates.df ??= new Int32Array(this.terms.length).fill(-1);
    let df = candidates.df[id] ?? -1;
    if (df < 0) {
      df = 0;
      for (let i = from; i < end; i++) df += candidates.allowed[docs[i] ?? 0] ?? 0;
      candidates.df[id] = df;
    }
    return df;
  }
}

/**
 * A repair that never appears beside the query's known words keeps this share of its weight. Mild:
 * on the even half of the typo rows a stronger discount (0.5) lost more right repairs ("playerss" →
 * playerid beside "player") than it saved; 0.85 kept most of "nodas kubernetes" → nodes.
 */
const COOCCURRENCE_DISCOUNT = 0.85;

/** Whether `x` is among `arr[lo..hi]` (sorted ascending). */
function binarySearch(arr: Int32Array, lo: number, hi: number, x: number): boolean {
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = arr[mid] ?? 0;
    if (v === x) return true;
    if (v < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}
