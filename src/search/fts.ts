/**
 * The words half of search, for any catalog: a request read and ranked by BM25F over a word index
 * (ftsRank), and the texts it is embedded as for the meaning half (meaningTexts). A catalog (tools,
 * skills) builds the index from its own fields and maps the ranked docs back to its own records.
 */
import { englishWords } from "./dictionary.ts";
import type { ModelWords } from "./model-words.ts";
import type { Ranker } from "./ranker.ts";
import type { Candidates, RankedDoc, WordReading, WordRepair } from "./ranker-options.ts";
import { type RequestWord, readRequest, requestClauses, stopwordSlipOf } from "./request.ts";
import type { QueryRewrite } from "./scores.ts";
import type { Reading } from "./synonyms.ts";
import { analyze, nameKey, splitWords, stem } from "./text.ts";

/** What the words half reads of a catalog's index: the ranker over its fields and its name keys. */
export interface WordIndex {
  readonly ranker: Ranker;
  /** nameKey of each doc's names → doc ids: a request that is a doc's name ranks it first. */
  readonly keys: ReadonlyMap<string, readonly number[]>;
}

/** One doc the fts path found, with its absolute score in [0, 1]. */
interface FtsDoc {
  readonly doc: number;
  readonly score: number;
  /** Found only through a fuzzy reading of a word (prefix, abbreviation, typo). */
  readonly fuzzy: boolean;
}

export interface FtsResult {
  /** Best first. */
  readonly docs: readonly FtsDoc[];
  readonly strategy: "and" | "or" | "fuzzy";
  /** What the path added to the query (typo repairs, synonyms), as the caller wrote the words. */
  readonly rewrites: readonly QueryRewrite[];
}

/**
 * The texts a request is embedded as for semantic ranking: the request as a person meant it —
 * shorthand spelled out, slips repaired ("stauts" → "status", "colud" → "could"; a typo'd word is
 * a different word to the model too) — split into its intents when it has several (requestClauses).
 * A slip is repaired against the words of the docs the caller may find, else against the model's own
 * words (`modelWords`), so a word no doc has ("umbrel" → "umbrella") still reaches the model as a
 * word; at most MODEL_REPAIRS words a request are looked up there. A doc's similarity to the request
 * is then its best over these texts.
 */
export function meaningTexts(
  index: WordIndex,
  read: ReadQuery,
  candidates: Candidates | undefined,
  modelWords?: ModelWords,
): string[] {
  let { text } = read;
  const dictionary = englishWords();
  const repaired = new Map<string, string>();
  let lookups = 0;
  for (const word of read.words) {
    if (word.literal || repaired.has(word.surface) || index.ranker.knows(word.term, candidates)) continue;
    let meant = stopwordSlipOf(word.surface);
    if (meant === undefined && !dictionary.has(word.surface)) {
      meant = index.ranker.typoRepair(word.term, word.surface, candidates);
      if (meant === undefined && modelWords !== undefined && lookups++ < MODEL_REPAIRS)
        meant = modelWords.repair(word.surface);
    }
    if (meant !== undefined) repaired.set(word.surface, meant);
  }
  if (repaired.size > 0) text = text.replace(/\p{L}+/gu, (word) => repaired.get(word.toLowerCase()) ?? word);
  const clauses = requestClauses(text);
  return clauses.length > 0 ? clauses : [text];
}

/** Unknown words of one request looked up among the model's words, at most (each reads a few thousand). */
const MODEL_REPAIRS = 16;

/** The synonym table (src/search/synonyms.ts) as search reads it. */
export interface QueryReadings {
  /** By analysed word, in index terms: searched beside the word. */
  readonly byStem: ReadonlyMap<string, readonly WordReading[]>;
  /** By word as typed (lowercase), for shorthand the word splitter would cut apart ("k8s", "PRs"). */
  readonly byToken: ReadonlyMap<string, readonly Reading[]>;
}

export function queryReadings(table: ReadonlyMap<string, readonly Reading[]>): QueryReadings {
  const byStem = new Map<string, WordReading[]>();
  for (const [word, readings] of table) {
    const list = byStem.get(stem(word)) ?? [];
    for (const r of readings) {
      const terms = analyze(r.words);
      // "msg" and "msgs" share a stem, and "message" and "messages" their terms: keep one.
      if (terms.length > 0 && !list.some((known) => known.terms.join(" ") === terms.join(" ")))
        list.push({ words: r.words, terms, weight: r.weight });
    }
    byStem.set(stem(word), list);
  }
  return { byStem, byToken: table };
}

/**
 * A request read once, for both halves of search: shorthand spelled out (spellOutShorthand), then
 * its words read (readRequest). The words half ranks it (ftsRank), the meaning half repairs and
 * splits it (meaningTexts).
 */
export interface ReadQuery {
  /** The request as asked: a doc named like it ranks first (WordIndex.keys). */
  readonly query: string;
  /** The request with its shorthand spelled out. */
  readonly text: string;
  /** The shorthand spelled out, as rewrites to report. */
  readonly spelledOut: readonly QueryRewrite[];
  /** The words of `text`, as readRequest reads them. */
  readonly words: readonly RequestWord[];
}

export function readQuery(query: string, readings: QueryReadings): ReadQuery {
  const spelled = spellOutShorthand(query, readings.byToken);
  return { query, text: spelled.text, spelledOut: spelled.rewrites, words: readRequest(spelled.text) };
}

/**
 * Shorthand the word splitter would cut into meaningless pieces ("k8s" → k, 8, s; "PRs" → p, rs) is
 * replaced by its first reading before analysis; other words keep their readings for the ranker.
 */
function spellOutShorthand(
  query: string,
  byToken: ReadonlyMap<string, readonly Reading[]>,
): { text: string; rewrites: QueryRewrite[] } {
  const rewrites: QueryRewrite[] = [];
  const text = query.replace(/[^\s]+/g, (token) => {
    const word = token.toLowerCase().replace(/^[^a-z0-9]+|[^a-z0-9/]+$/g, "");
    const reading = byToken.get(word)?.[0];
    if (!reading || splitWords(token).join(" ") === word) return token;
    rewrites.push({ from: word, to: reading.words, kind: "synonym" });
    return reading.words;
  });
  return { text, rewrites };
}

/**
 * The weight of a word that belongs to a literal of the request (an id, path, file name, number or
 * quoted text: src/search/request.ts) relative to the words that say what is asked. Chosen on the
 * even half of the public sets among 1, 0.5 and 0.3 (few of their requests carry literals: R@5 moved
 * by at most 0.003); it is for requests that name files and ids, as agents' do.
 */
const LITERAL_WEIGHT = 0.3;

/**
 * The fts path over one word index: the request read (shorthand spelled out, literals and stopword
 * slips told apart, synonyms beside their words), then ranked by BM25F, widening AND → OR → fuzzy.
 * Each doc's score is absolute (lexicalScore): a doc named like the whole request is 1.
 */
export function ftsRank(
  index: WordIndex,
  request: ReadQuery,
  candidates: Candidates | undefined,
  limit: number,
  repeat: number,
  readings: QueryReadings,
): FtsResult {
  const { query, text } = request;
  // A slip for a stopword is one, unless the catalog has the word as typed.
  let read = request.words.filter(
    (w) => index.ranker.knows(w.term, candidates) || stopwordSlipOf(w.surface) === undefined,
  );
  // A query of only stopwords ("how to") still searches for its words.
  if (read.length === 0)
    read = splitWords(text).map((surface) => ({ term: surface, surface, literal: false }));
  const sequence = read.map((w) => w.term);
  const byTerm = new Map<string, { surface: string; literal: boolean; count: number }>();
  for (const w of read) {
    const seen = byTerm.get(w.term);
    // A word counts as literal only if every time it appears it is part of one.
    if (seen) byTerm.set(w.term, { ...seen, literal: seen.literal && w.literal, count: seen.count + 1 });
    else byTerm.set(w.term, { surface: w.surface, literal: w.literal, count: 1 });
  }
  const queryWords = [...byTerm.keys()].slice(0, 64);
  const info = queryWords.map((w) => byTerm.get(w) as { surface: string; literal: boolean; count: number });
  const dictionary = englishWords();
  const nameHits = index.keys.get(nameKey(query)) ?? [];
  const ranked = index.ranker.rank(queryWords, {
    limit,
    candidates,
    nameHits,
    phrases: [...new Set([...pairs(sequence), ...joinedIdentifiers(text)])],
    wordWeights: info.map((w) => (1 + repeat * Math.log(w.count)) * (w.literal ? LITERAL_WEIGHT : 1)),
    readings: queryWords.map((w) => readings.byStem.get(w)),
    surfaces: info.map((w) => w.surface),
    repairable: info.map((w) => !w.literal && !dictionary.has(w.surface)),
  });
  const named = new Set(nameHits);
  return {
    docs: ranked.docs.map((doc) => ({
      doc: doc.doc,
      score: named.has(doc.doc) || ranked.scale <= 0 ? 1 : lexicalScore(doc, ranked.scale, queryWords.length),
      fuzzy: doc.fuzzy,
    })),
    strategy: ranked.strategy,
    rewrites: [...request.spelledOut, ...rewritesOf(text, ranked.repairs)],
  };
}

/**
 * The lexical score of a doc for a query of `words` analysed words: a logistic curve over
 * ln(relevance / RankResult.scale) and ln(words), fitted by logistic regression (balanced classes) on
 * the even half of bench/score-calibration.ts's public queries: a best hit that is one of the query's
 * gold tools against the best hit of a request asked of a catalog it was not written for. Long
 * requests match a smaller share of their words even when the doc is right, hence the word count.
 * For one query the score rises with relevance, so the ranking order is the score order.
 */
const LEXICAL_CALIBRATION = { intercept: 1.241, perLogRatio: 3.134, perLogWords: 1.948 } as const;

function lexicalScore(doc: RankedDoc, scale: number, words: number): number {
  const ratio = Math.min(1, doc.relevance / scale);
  if (ratio <= 0) return 0;
  const { intercept, perLogRatio, perLogWords } = LEXICAL_CALIBRATION;
  return 1 / (1 + Math.exp(-(intercept + perLogRatio * Math.log(ratio) + perLogWords * Math.log(words))));
}

/**
 * Synonyms and typo repairs as the caller wrote the words: a repair is spelled by the ranker with the
 * typed word's ending ("chnges" → "changes"). Readings by prefix or by letters in order are not
 * reported: a stem is no word to show ("msg" → "messag"); the synonym table spells the common
 * abbreviations out.
 */
function rewritesOf(query: string, repairs: readonly WordRepair[]): QueryRewrite[] {
  const shown = repairs.filter((r) => r.kind === "typo" || r.kind === "synonym");
  if (shown.length === 0) return [];
  const written = new Map<string, string>();
  for (const word of splitWords(query)) if (!written.has(stem(word))) written.set(stem(word), word);
  return shown.map(({ word, term, kind }) => ({
    from: written.get(word) ?? word,
    to: term,
    kind: kind === "synonym" ? kind : "typo",
  }));
}

/** Identifiers of the query ("getRandomImage", "get_random_image") also as one word, as glued names spell them. */
function joinedIdentifiers(query: string): string[] {
  const out: string[] = [];
  for (const chunk of query.split(/[^A-Za-z0-9_.-]+/)) {
    const words = splitWords(chunk);
    if (words.length >= 2 && words.length <= 6) out.push(stem(words.join("")));
  }
  return out;
}

/** Adjacent word pairs, the proximity signal of a `phrases` field. */
export function pairs(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < words.length; i++) out.push(`${words[i - 1]} ${words[i]}`);
  return out;
}
