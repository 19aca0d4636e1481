/**
 * In-memory BM25F ranker: the index every FTS search runs on (nothing is searched in SQLite). Rebuilt
 * from the catalog's tools after every change, in slices (see `Ranker.steps`). Corpus statistics (N,
 * df) are taken over the caller's visible tools only, and field lengths are normalised per owner (see
 * buildPostingIndex), so another tenant's tools cannot shift the scores of the tools a caller sees.
 *
 * Over 500 lines because one query's scoring (AND → OR → fuzzy widening, proximity, feedback terms)
 * shares the scratch buffers below; the index build is in ranker-index.ts.
 */

import { typoCost } from "../text/typos.ts";
import { buildPostingIndex, type PostingIndex, type Postings } from "./ranker-index.ts";

const SHORT_QUERY_WORDS = 4;

export interface RankerConfig {
  readonly k1: number;
  readonly weights: readonly number[];
  readonly b: readonly number[];
  /** Multiplier on the contribution of a term an unknown word was read as by prefix or abbreviation. */
  readonly fuzzyWeight: number;
  /** The same for a typo repair (a term within a few edits), always tried. */
  readonly typoWeight: number;
  /** Widen unknown words of long queries to fuzzy when fewer than `limit` docs matched. */
  readonly fillWithFuzzy: boolean;
  /** Extra weight per repetition of a word in the query: 1 + repeat · log(count). */
  readonly repeat: number;
  /** Exponent of the share of query terms a document covers (coordination). */
  readonly coordination: number;
  /** Pseudo-relevance feedback: first-pass docs to read (0 = off). */
  readonly prfDocs: number;
  /** Expansion terms added from those docs. */
  readonly prfTerms: number;
  /** Weight of the best expansion term relative to an original query word. */
  readonly prfWeight: number;
  /** Expansion terms must occur in at most this share of the candidates (discriminative). */
  readonly prfMaxDf: number;
  /** Expansion terms must occur in at least this many feedback docs. */
  readonly prfMinDocs: number;
  /** Exponent on idf: above 1 stresses rare query words further. */
  readonly idfPower: number;
}

/** Tuned on toolbench + metatool samples (bench/lib/tune-discovery.ts); generic, not per dataset. */
export const DEFAULT_RANKER: RankerConfig = {
  k1: 2,
  weights: [2.25, 2, 0.85, 1, 0.8, 0.5],
  b: [0.9, 0.3, 0.3, 0.75, 0.5, 0.5],
  fuzzyWeight: 0.4,
  // Chosen on the even half of the typo rows of bench/search-quality.ts (0.4 / 0.6 / 0.8: metatool
  // kept 95.6 / 96.9 / 97.5 % of its clean R@5, toolbench 97.9 / 98.7 / 98.6 %; clean rows unchanged).
  typoWeight: 0.8,
  coordination: 0,
  fillWithFuzzy: true,
  repeat: 0.5,
  prfDocs: 3,
  prfTerms: 6,
  prfWeight: 0.2,
  prfMaxDf: 0.1,
  prfMinDocs: 2,
  idfPower: 1.25,
};

export interface RankedDoc {
  readonly doc: number;
  readonly relevance: number;
  readonly fuzzy: boolean;
}

export interface RankOptions {
  readonly limit: number;
  /** The docs that may be returned; undefined = every doc. Filters before statistics, ranking and limit. */
  readonly candidates?: Candidates;
  /** Per word weight (e.g. from repetition in the query); default 1. */
  readonly wordWeights?: readonly number[];
  /** Adjacent query word pairs ("a b"), scored against the phrases field; not counted as words. */
  readonly phrases?: readonly string[];
  /** Docs whose name equals the whole query; they go first. */
  readonly nameHits?: readonly number[];
  /** Per word, other readings (abbreviations, synonyms) searched for it at a discount. */
  readonly readings?: readonly (readonly WordReading[] | undefined)[];
  /** Per word, how it was typed (lower-case, unstemmed): what typo repair compares. Default: the word. */
  readonly surfaces?: readonly string[];
  /**
   * Per word, whether an unknown word may be read as a vocabulary term (typo, prefix, abbreviation);
   * default true. Not for literals (ids, paths, quoted text) nor for real words the catalog lacks.
   */
  readonly repairable?: readonly boolean[];
}

/** Another way to read a query word: its analysed terms, searched at `weight` of the word's own. */
export interface WordReading {
  /** As written in the synonym table, for query_rewrites. */
  readonly words: string;
  readonly terms: readonly string[];
  readonly weight: number;
}

/** How an unknown query word was read: a vocabulary term within a few edits, by prefix, or as an abbreviation. */
type ExpansionKind = "typo" | "prefix" | "abbreviation";

/** A query word and what it was also searched as: its best expansion, or a reading. */
export interface WordRepair {
  readonly word: string;
  /** The vocabulary term (a stem) for an expansion; the reading's words for a synonym. */
  readonly term: string;
  readonly kind: ExpansionKind | "synonym";
}

interface Expansion {
  readonly id: number;
  /** Similarity in (0, 1]. */
  readonly weight: number;
  readonly kind: ExpansionKind;
}

export interface RankResult {
  readonly docs: RankedDoc[];
  readonly strategy: "and" | "or" | "fuzzy";
  /** Unknown query words that were searched as vocabulary terms, best expansion each. */
  readonly repairs: readonly WordRepair[];
  /**
   * The relevance of a tool that has every query word once in its name: the unit of the absolute
   * score (relevance / scale, capped at 1). It depends only on the query and the corpus statistics of
   * the candidates, so a tool's score does not change with the other hits or with `limit`.
   */
  readonly scale: number;
}

/**
 * The docs a search may return (allowed[doc] = 1) and the corpus statistics over them: N, and df per
 * term, counted as queries first need them. Its owner (the catalog keeps one per caller view and
 * index) passes the same set to every search of that view, so each df is counted once, not per query.
 */
export class Candidates {
  /** N: how many docs are allowed. */
  readonly count: number;
  /** df per term id over the allowed docs, -1 = not counted yet; sized by the ranker on first use. */
  df: Int32Array | undefined;

  constructor(readonly allowed: Uint8Array) {
    let count = 0;
    for (let d = 0; d < allowed.length; d++) count += allowed[d] ?? 0;
    this.count = count;
  }
}

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
  private readonly expansions = new Map<string, Expansion[]>();
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
    config: RankerConfig = DEFAULT_RANKER,
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
    this.accumulate(terms, candidates);
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
    const result = this.computeExpansion(word, surface);
    if (this.expansions.size > 10_000) this.expansions.clear();
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
    for (const w of words) {
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

  private computeExpansion(word: string, surface: string): Expansion[] {
    const len = word.length;
    if (len < 2) return [];
    const maxCost = typoBudget(surface.length);
    const found: Expansion[] = [];
    // Typos rarely hit the first letter: only that letter's terms are read, and of those (sorted by
    // length) none shorter than the cheapest edits allow.
    const bucket = this.firstChar.get(word[0] ?? "") ?? new Int32Array(0);
    const shortest = len - Math.floor(maxCost / CHEAPEST_DROP);
    for (let i = firstWithLength(bucket, this.terms, shortest); i < bucket.length; i++) {
      const id = bucket[i] as number;
      const t = this.terms[id] ?? "";
      let expansion: Expansion | undefined;
      if (maxCost > 0) {
        // The typed word's own stem too ("nmuber" → "nmub" → numb).
        const cost = Math.min(stemTypoCost(surface, t, maxCost), typoCost(word, t, maxCost));
        if (cost <= maxCost) expansion = { id, weight: 1 - 0.2 * cost, kind: "typo" };
      }
      if (!expansion && len >= 3 && t.length > len && t.startsWith(word))
        expansion = { id, weight: 0.8, kind: "prefix" };
      if (!expansion && len <= ABBREVIATION_MAX && t.length > len && isAbbreviation(word, t))
        expansion = { id, weight: 0.5, kind: "abbreviation" };
      if (expansion) found.push(expansion);
    }
    found.sort((a, b) => b.weight - a.weight);
    return found.slice(0, 64);
  }
}

/**
 * The typo cost (src/text/typos.ts) a word typed this long may carry: none up to 3 letters, one plain
 * edit (or two swaps) up to 7, then two.
 */
function typoBudget(length: number): number {
  if (length <= 3) return 0;
  return length <= 7 ? 1 : 2;
}

/**
 * A repair that never appears beside the query's known words keeps this share of its weight. Mild:
 * on the even half of the typo rows a stronger discount (0.5) lost more right repairs ("playerss" →
 * playerid beside "player") than it saved; 0.85 kept most of "nodas kubernetes" → nodes.
 */
const COOCCURRENCE_DISCOUNT = 0.85;

/** Endings a stem may have lost: the typed word is compared with the stem without each of them. */
const ENDINGS = ["", "s", "es", "e", "d", "ed", "ing"] as const;

/**
 * The typo cost of reading a typed word as a vocabulary stem: the least over the word and the word
 * without an ending the stem dropped, against the stem and the stem with the final e stems drop
 * ("stauts" → status, "tmies" → "tmie" → time, "staet" → state, "chnges" → "chng" → chang).
 */
function stemTypoCost(typed: string, stemmed: string, max: number): number {
  let best = Number.POSITIVE_INFINITY;
  for (const ending of ENDINGS) {
    if (!typed.endsWith(ending) || typed.length - ending.length < 3) continue;
    const base = typed.slice(0, typed.length - ending.length);
    for (const form of [stemmed, `${stemmed}e`])
      best = Math.min(best, typoCost(base, form, Math.min(max, best)));
  }
  return best;
}

/** Endings a word may have beyond its stem, to spell a repair back as a word. */
const SPELLED_ENDINGS = ["", "e", "s", "es", "d", "ed", "ing", "er", "ers", "y", "ies"] as const;

/** The repaired word as written: the stem with the ending that makes it closest to what was typed. */
function spellRepair(typed: string, stemmed: string): string {
  let best = stemmed;
  let bestCost = Number.POSITIVE_INFINITY;
  const root = stemmed.endsWith("i") ? stemmed.slice(0, -1) : stemmed;
  for (const ending of SPELLED_ENDINGS) {
    const word = ending === "y" || ending === "ies" ? root + ending : stemmed + ending;
    const cost = typoCost(typed, word, 4);
    if (cost < bestCost) {
      bestCost = cost;
      best = word;
    }
  }
  return best;
}

/** The cheapest way a typed word is shorter than the term: a double letter typed once. */
const CHEAPEST_DROP = 0.6;

/**
 * Longest unknown word read as an abbreviation ("msg" → "message", "img", "cfg"); longer unknown
 * words are typos or names, and checking them against every longer term is most of a fuzzy search.
 */
const ABBREVIATION_MAX = 5;

/** Index of the first term in `ids` (sorted by length) at least `length` long. */
function firstWithLength(ids: Int32Array, terms: readonly string[], length: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((terms[ids[mid] as number] ?? "").length < length) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Letters of `abbr` appear in order in `word`, consonants only are enough ("msg" → "message"). */
function isAbbreviation(abbr: string, word: string): boolean {
  if (word.length > abbr.length * 4) return false;
  let j = 0;
  for (let i = 0; i < word.length && j < abbr.length; i++) if (word[i] === abbr[j]) j++;
  return j === abbr.length;
}

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
