import type { Candidates, RankedDoc, WordReading, WordRepair } from "../search/ranker-options.ts";
import { readRequest, requestClauses, stopwordSlipOf } from "../search/request.ts";
import { analyze, nameKey, splitWords, stem } from "../search/text.ts";
import {
  type CallerRegex,
  compileCallerRegex,
  fold,
  matches,
  matchesAtStart,
  matchesWhole,
  mayMatch,
} from "../text/caller-regex.ts";
import { englishWords } from "../text/dictionary.ts";
import type { LiteralIndex } from "../text/literal-index.ts";
import type { ModelWords } from "../text/model-words.ts";
import { type QueryRewrite, REGEX_SCORE } from "../text/scores.ts";
import type { Reading } from "../text/synonyms.ts";
import { pairs } from "./search-index.ts";
import type { MatchType, SearchHit, SearchIndex, SearchStrategy, SearchType, Tool } from "./types.ts";

/**
 * The three search paths over one build of the index: fts (the BM25F ranker, widening AND → OR →
 * fuzzy), regex (RE2 over names, then descriptions and tags, narrowed by the literal index) and exact
 * (name, alias, then the separator-insensitive name key). Each returns only `candidates`' docs.
 */
export function runSearch(
  index: SearchIndex,
  search: { readonly query: string; readonly type: SearchType; readonly limit: number },
  candidates: Candidates | undefined,
  context: {
    /** Names of the tools `query` is an alias of (one per owner). */
    readonly aliasTargets: (query: string) => readonly string[];
    /** The build's literal index, once built (regex scans without it until then). */
    readonly literalIndex: LiteralIndex | undefined;
    /** Extra weight per repetition of a query word (RankerConfig.repeat). */
    readonly repeat: number;
    /** Abbreviations and synonyms (queryReadings). */
    readonly readings: QueryReadings;
  },
): SearchPathResult {
  const { query, type, limit } = search;
  const allowed = candidates?.allowed;
  if (type === "exact")
    return {
      hits: exact(index, query, allowed, limit, context.aliasTargets(query)),
      strategy: "exact",
      rewrites: [],
    };
  if (type === "regex")
    return {
      hits: regex(index, compileCallerRegex(query), allowed, limit, context.literalIndex),
      strategy: "regex",
      rewrites: [],
    };
  return fts(index, query, candidates, limit, context.repeat, context.readings);
}

/**
 * The texts a request is embedded as for semantic ranking: the request as a person meant it —
 * shorthand spelled out, slips repaired ("stauts" → "status", "colud" → "could"; a typo'd word is
 * a different word to the model too) — split into its intents when it has several (requestClauses).
 * A slip is repaired against the words of the tools the caller may find, else against the model's own
 * words (`modelWords`), so a word no tool has ("umbrel" → "umbrella") still reaches the model as a
 * word; at most MODEL_REPAIRS words a request are looked up there. A tool's similarity to the request
 * is then its best over these texts.
 */
export function meaningTexts(
  index: SearchIndex,
  query: string,
  candidates: Candidates | undefined,
  readings: QueryReadings,
  modelWords?: ModelWords,
): string[] {
  let text = spellOutShorthand(query, readings.byToken).text;
  const dictionary = englishWords();
  const repaired = new Map<string, string>();
  let lookups = 0;
  for (const word of readRequest(text)) {
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

/** The synonym table (src/text/synonyms.ts) as search reads it. */
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

export interface SearchPathResult {
  readonly hits: SearchHit[];
  readonly strategy: SearchStrategy;
  /** What the FTS path added to the query (typo repairs, synonyms); empty for regex and exact. */
  readonly rewrites: readonly QueryRewrite[];
}

/**
 * The weight of a word that belongs to a literal of the request (an id, path, file name, number or
 * quoted text: src/search/request.ts) relative to the words that say what is asked. Chosen on the
 * even half of the public sets among 1, 0.5 and 0.3 (few of their requests carry literals: R@5 moved
 * by at most 0.003); it is for requests that name files and ids, as agents' do.
 */
const LITERAL_WEIGHT = 0.3;

function fts(
  index: SearchIndex,
  query: string,
  candidates: Candidates | undefined,
  limit: number,
  repeat: number,
  readings: QueryReadings,
): SearchPathResult {
  const spelled = spellOutShorthand(query, readings.byToken);
  // A slip for a stopword is one, unless the catalog has the word as typed.
  let read = readRequest(spelled.text).filter(
    (w) => index.ranker.knows(w.term, candidates) || stopwordSlipOf(w.surface) === undefined,
  );
  // A query of only stopwords ("how to") still searches for its words.
  if (read.length === 0)
    read = splitWords(spelled.text).map((surface) => ({ term: surface, surface, literal: false }));
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
    phrases: [...new Set([...pairs(sequence), ...joinedIdentifiers(spelled.text)])],
    wordWeights: info.map((w) => (1 + repeat * Math.log(w.count)) * (w.literal ? LITERAL_WEIGHT : 1)),
    readings: queryWords.map((w) => readings.byStem.get(w)),
    surfaces: info.map((w) => w.surface),
    repairable: info.map((w) => !w.literal && !dictionary.has(w.surface)),
  });
  // Absolute (see lexicalScore); a tool named like the query is 1.
  const named = new Set(nameHits);
  const hits = ranked.docs.map((doc) =>
    hit(
      index.docs[doc.doc] as Tool,
      named.has(doc.doc) || ranked.scale <= 0 ? 1 : lexicalScore(doc, ranked.scale, queryWords.length),
      doc.fuzzy ? "fts_fuzzy" : "fts",
    ),
  );
  return {
    hits,
    strategy: ranked.strategy,
    rewrites: [...spelled.rewrites, ...rewritesOf(spelled.text, ranked.repairs)],
  };
}

function exact(
  index: SearchIndex,
  query: string,
  allowed: Uint8Array | undefined,
  limit: number,
  aliasTargets: readonly string[],
): SearchHit[] {
  const ok = (d: number) => !allowed || allowed[d] === 1;
  const aliasOf = aliasTargets.flatMap((name) => sameName(index, name));
  const direct = [...sameName(index, query), ...aliasOf].find(ok);
  if (direct !== undefined) return [hit(index.docs[direct] as Tool, 1, "exact")];
  const ranked: RankedDoc[] = (index.keys.get(nameKey(query)) ?? [])
    .filter(ok)
    .map((doc) => ({ doc, relevance: 1, fuzzy: false }));
  ranked.sort((a, b) => index.ranker.compare(a, b));
  return ranked.slice(0, limit).map((r) => hit(index.docs[r.doc] as Tool, 1, "exact_normalized"));
}

function regex(
  index: SearchIndex,
  re: CallerRegex,
  allowed: Uint8Array | undefined,
  limit: number,
  literalIndex: LiteralIndex | undefined,
): SearchHit[] {
  const top: RankedDoc[] = [];
  const kinds = new Map<number, MatchType>();
  const consider = (doc: number, relevance: number, kind: MatchType) => {
    const item = { doc, relevance, fuzzy: false };
    let i = top.length;
    while (i > 0 && index.ranker.compare(top[i - 1] as RankedDoc, item) > 0) i--;
    if (i >= limit) return;
    top.splice(i, 0, item);
    kinds.set(doc, kind);
    if (top.length > limit) top.pop();
  };
  const { docs, bare, lowerNames } = index;
  // 1 = the name matched (or the doc is not a candidate): skip it in the text pass.
  const done = new Uint8Array(docs.length);
  // Visiting docs in tie-break order means a later doc enters only with a strictly higher score,
  // so once the page is full the cheaper checks (and finally the whole scan) can stop early. The
  // literal index, once built, narrows the visit to docs holding the pattern's literals.
  const narrowed =
    literalIndex && (re.literals.length > 0 || re.prefixLiteral)
      ? literalIndex.candidates(re.literals, re.prefixLiteral)
      : undefined;
  const visit = narrowed ? inTieOrder(index, narrowed) : index.tieOrder;
  for (const d of visit) {
    if (allowed && allowed[d] !== 1) continue;
    const floor = top.length < limit ? -1 : (top[limit - 1] as RankedDoc).relevance;
    if (floor >= REGEX_SCORE.fullName) break;
    const name = (docs[d] as Tool).name;
    const lowered = lowerNames[d] ?? "";
    if (!mayMatch(re, lowered) || !matches(re, name, lowered)) continue;
    done[d] = 1;
    const b = bare[d] ?? name;
    const loweredBare = b === name ? lowered : fold(b);
    if (matchesWhole(re, name, lowered) || (b !== name && matchesWhole(re, b, loweredBare)))
      consider(d, REGEX_SCORE.fullName, "regex_full_name");
    else if (floor >= REGEX_SCORE.namePrefix) continue;
    else if (matchesAtStart(re, name, lowered) || (b !== name && matchesAtStart(re, b, loweredBare)))
      consider(d, REGEX_SCORE.namePrefix, "regex_name_prefix");
    else if (floor < REGEX_SCORE.nameSubstring)
      consider(d, REGEX_SCORE.nameSubstring, "regex_name_substring");
  }
  // Text-only matches score lowest: only needed when names did not fill the page.
  if (top.length < limit)
    for (const d of visit) {
      // Every text-only hit scores the same and arrives in tie order: a full page cannot change.
      if (top.length >= limit) break;
      if (done[d] === 1 || (allowed && allowed[d] !== 1)) continue;
      const t = docs[d] as Tool;
      const description = index.lowerDescriptions[d] ?? "";
      const inDescription = mayMatch(re, description) && matches(re, t.description, description);
      const tags = index.lowerTags[d] ?? [];
      if (
        inDescription ||
        t.tags.some((tag, i) => mayMatch(re, tags[i] ?? "") && matches(re, tag, tags[i] ?? ""))
      )
        consider(d, REGEX_SCORE.text, "regex_text");
    }
  return top.map((r) => hit(docs[r.doc] as Tool, r.relevance, kinds.get(r.doc) ?? "regex_text"));
}

/** Doc ids of the tools called `name`, one per owner (docs are sorted by name, then owner). */
function sameName(index: SearchIndex, name: string): number[] {
  const first = index.byName.get(name);
  const ids: number[] = [];
  if (first === undefined) return ids;
  for (let d = first; d < index.docs.length && index.docs[d]?.name === name; d++) ids.push(d);
  return ids;
}

/**
 * `docs` in tie-break order: few are sorted by rank; many are picked from the tie order through a
 * mask (no sort; a plain array, since a generator allocates a result object per doc it yields).
 */
function inTieOrder(index: SearchIndex, docs: Int32Array): Int32Array {
  if (docs.length <= 256)
    return Int32Array.from(docs, (d) => index.tieRank[d] as number)
      .sort()
      .map((rank) => index.tieOrder[rank] as number);
  const mask = new Uint8Array(index.docs.length);
  for (let i = 0; i < docs.length; i++) mask[docs[i] as number] = 1;
  const ordered = new Int32Array(docs.length);
  let k = 0;
  const { tieOrder } = index;
  for (let i = 0; i < tieOrder.length; i++) {
    const d = tieOrder[i] as number;
    if (mask[d] === 1) ordered[k++] = d;
  }
  return ordered;
}

function hit(t: Tool, score: number, matchType: MatchType): SearchHit {
  return {
    name: t.name,
    description: t.description,
    score,
    lexicalScore: score,
    semanticScore: 0,
    learnedScore: 0,
    matchType,
    loadingMode: t.loadingMode,
  };
}

/**
 * The lexical score of a tool for a query of `words` analysed words: a logistic curve over
 * ln(relevance / RankResult.scale) and ln(words), fitted by logistic regression (balanced classes) on
 * the even half of bench/score-calibration.ts's public queries: a best hit that is one of the query's
 * gold tools against the best hit of a request asked of a catalog it was not written for. Long
 * requests match a smaller share of their words even when the tool is right, hence the word count.
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
