import { ftsRank, type QueryReadings, type ReadQuery } from "../search/fts.ts";
import { type DocHit, lexicalHit } from "../search/fusion.ts";
import type { LiteralIndex } from "../search/literal-index.ts";
import type { Candidates, RankedDoc } from "../search/ranker-options.ts";
import { type QueryRewrite, REGEX_SCORE } from "../search/scores.ts";
import { nameKey } from "../search/text.ts";
import {
  type CallerRegex,
  compileCallerRegex,
  fold,
  matches,
  matchesAtStart,
  matchesWhole,
  mayMatch,
} from "../text/caller-regex.ts";
import type { MatchType, PreparedSearch, SearchIndex, SearchStrategy, Tool } from "./types.ts";

/**
 * The three search paths over one build of the index: fts (the BM25F ranker, widening AND → OR →
 * fuzzy), regex (RE2 over names, then descriptions and tags, narrowed by the literal index) and exact
 * (name, alias, then the separator-insensitive name key). Each returns only `candidates`' docs.
 */
export function runSearch(
  search: PreparedSearch,
  limit: number,
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
  const { query, type, index, candidates, read } = search;
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
  if (!read) throw new Error("an FTS search is prepared with its query read");
  return fts(index, read, candidates, limit, context.repeat, context.readings);
}

export interface SearchPathResult {
  readonly hits: DocHit<MatchType>[];
  readonly strategy: SearchStrategy;
  /** What the FTS path added to the query (typo repairs, synonyms); empty for regex and exact. */
  readonly rewrites: readonly QueryRewrite[];
}

function fts(
  index: SearchIndex,
  read: ReadQuery,
  candidates: Candidates | undefined,
  limit: number,
  repeat: number,
  readings: QueryReadings,
): SearchPathResult {
  const found = ftsRank(index, read, candidates, limit, repeat, readings);
  return {
    hits: found.docs.map((d) => lexicalHit<MatchType>(d.doc, d.score, d.fuzzy ? "fts_fuzzy" : "fts")),
    strategy: found.strategy,
    rewrites: found.rewrites,
  };
}

function exact(
  index: SearchIndex,
  query: string,
  allowed: Uint8Array | undefined,
  limit: number,
  aliasTargets: readonly string[],
): DocHit<MatchType>[] {
  const ok = (d: number) => !allowed || allowed[d] === 1;
  const aliasOf = aliasTargets.flatMap((name) => index.docsNamed(name));
  const direct = [...index.docsNamed(query), ...aliasOf].find(ok);
  if (direct !== undefined) return [lexicalHit<MatchType>(direct, 1, "exact")];
  const ranked: RankedDoc[] = (index.keys.get(nameKey(query)) ?? [])
    .filter(ok)
    .map((doc) => ({ doc, relevance: 1, fuzzy: false }));
  ranked.sort((a, b) => index.ranker.compare(a, b));
  return ranked.slice(0, limit).map((r) => lexicalHit<MatchType>(r.doc, 1, "exact_normalized"));
}

function regex(
  index: SearchIndex,
  re: CallerRegex,
  allowed: Uint8Array | undefined,
  limit: number,
  literalIndex: LiteralIndex | undefined,
): DocHit<MatchType>[] {
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
  return top.map((r) => lexicalHit<MatchType>(r.doc, r.relevance, kinds.get(r.doc) ?? "regex_text"));
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
