import { invalidArgument } from "../errors.ts";
import {
  type CallerRegex,
  fold,
  matches,
  matchesAtStart,
  matchesWhole,
  mayMatch,
} from "../text/caller-regex.ts";
import type { MatchType } from "./answer.ts";
import type { WordIndex } from "./fts.ts";
import { type DocHit, lexicalHit } from "./fusion.ts";
import type { LiteralIndex } from "./literal-index.ts";
import type { RankedDoc } from "./ranker-options.ts";
import { nameKey } from "./text.ts";

/**
 * Regex and exact search over any catalog's docs: one score by where a pattern matched, one order
 * (the catalog's tie-break order), one bound on the work a pattern may cause.
 */

/** Regex hits score by where the pattern matched, in [0, 1] like every other score. */
const REGEX_SCORE = {
  fullName: 0.95,
  namePrefix: 0.9,
  nameSubstring: 0.85,
  /** Description, trigger or tags only. */
  text: 0.75,
} as const;

/**
 * Characters one regex search may run RE2 on (tens of ns a character, with the scan around it):
 * past them the pattern is refused, so no caller's pattern holds the event loop, whatever the
 * catalog. Plain literals are matched by string search and do not count.
 */
const MAX_REGEX_TEXT = 500_000;

/** What regex and exact search read of a catalog's docs (numbered 0..docCount-1). */
export interface PatternDocs extends WordIndex {
  readonly docCount: number;
  /** Doc ids in tie-break order, and each doc's position in it: equal scores keep this order. */
  readonly tieOrder: Int32Array;
  readonly tieRank: Int32Array;
  /** The docs with exactly this name, the one a caller means first. */
  docsNamed(name: string): readonly number[];
  nameOf(doc: number): string;
  /** Per doc: fold(name), and the name without its namespace (matched as the name is). */
  readonly foldedNames: readonly string[];
  readonly bareNames: readonly string[];
  /** Per doc: its other texts (description, tags…), folded, each tested on its own. */
  readonly foldedTexts: readonly (readonly string[])[];
  /** The same texts as written (a catalog may hand the folded ones: RE2 runs case-insensitively). */
  textsOf(doc: number): readonly string[];
}

/**
 * Exact search: the docs named `query` (or one of `aliasTargets`), the first the caller may see;
 * else those whose separator- and case-insensitive name key is the query's, in tie order.
 */
export function exactHits(
  docs: PatternDocs,
  query: string,
  aliasTargets: readonly string[],
  allowed: Uint8Array | undefined,
  limit: number,
): DocHit<MatchType>[] {
  const ok = (d: number) => !allowed || allowed[d] === 1;
  const aliasOf = aliasTargets.flatMap((name) => docs.docsNamed(name));
  const direct = [...docs.docsNamed(query), ...aliasOf].find(ok);
  if (direct !== undefined) return [lexicalHit<MatchType>(direct, 1, "exact")];
  const ranked: RankedDoc[] = (docs.keys.get(nameKey(query)) ?? [])
    .filter(ok)
    .map((doc) => ({ doc, relevance: 1, fuzzy: false }));
  ranked.sort((a, b) => docs.ranker.compare(a, b));
  return ranked.slice(0, limit).map((r) => lexicalHit<MatchType>(r.doc, 1, "exact_normalized"));
}

/**
 * Regex search (RE2: linear time), best `limit` first: a whole name, then a name's start, then
 * inside a name, then only a text. The literal pre-check (and the literal index, once built) skips
 * docs that cannot match; a pattern that would still run RE2 over too much text is refused.
 */
export function regexHits(
  docs: PatternDocs,
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
    while (i > 0 && docs.ranker.compare(top[i - 1] as RankedDoc, item) > 0) i--;
    if (i >= limit) return;
    top.splice(i, 0, item);
    kinds.set(doc, kind);
    if (top.length > limit) top.pop();
  };
  const run = new PatternRun(re);
  const { foldedNames, bareNames } = docs;
  // 1 = the name matched (or the doc is not a candidate): skip it in the text pass.
  const done = new Uint8Array(docs.docCount);
  // Visiting docs in tie-break order means a later doc enters only with a strictly higher score,
  // so once the page is full the cheaper checks (and finally the whole scan) can stop early. The
  // literal index, once built, narrows the visit to docs holding the pattern's literals.
  const narrowed =
    literalIndex && (re.literals.length > 0 || re.prefixLiteral)
      ? literalIndex.candidates(re.literals, re.prefixLiteral)
      : undefined;
  const visit = narrowed ? inTieOrder(docs, narrowed) : docs.tieOrder;
  for (let i = 0; i < visit.length; i++) {
    const d = visit[i] as number;
    if (allowed && allowed[d] !== 1) continue;
    const folded = foldedNames[d] as string;
    if (!mayMatch(re, folded)) continue;
    const floor = top.length < limit ? -1 : (top[limit - 1] as RankedDoc).relevance;
    if (floor >= REGEX_SCORE.fullName) break;
    const name = docs.nameOf(d);
    if (!run.matches(name, folded)) continue;
    done[d] = 1;
    const bare = bareNames[d] ?? name;
    const foldedBare = bare === name ? folded : fold(bare);
    const either = (test: (text: string, lowered: string) => boolean) =>
      test(name, folded) || (bare !== name && test(bare, foldedBare));
    if (either((t, l) => run.matchesWhole(t, l))) consider(d, REGEX_SCORE.fullName, "regex_full_name");
    else if (floor >= REGEX_SCORE.namePrefix) continue;
    else if (either((t, l) => run.matchesAtStart(t, l)))
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
      const folded = docs.foldedTexts[d] ?? [];
      if (!folded.some((text) => mayMatch(re, text))) continue;
      const texts = docs.textsOf(d);
      if (texts.some((text, i) => mayMatch(re, folded[i] ?? "") && run.matches(text, folded[i] ?? "")))
        consider(d, REGEX_SCORE.text, "regex_text");
    }
  return top.map((r) => lexicalHit<MatchType>(r.doc, r.relevance, kinds.get(r.doc) ?? "regex_text"));
}

/** One regex search's matching, counting the text RE2 runs on against MAX_REGEX_TEXT. */
class PatternRun {
  private text = 0;

  constructor(private readonly re: CallerRegex) {}

  matches(text: string, lowered: string): boolean {
    this.charge(text);
    return matches(this.re, text, lowered);
  }

  matchesWhole(text: string, lowered: string): boolean {
    this.charge(text);
    return matchesWhole(this.re, text, lowered);
  }

  matchesAtStart(text: string, lowered: string): boolean {
    this.charge(text);
    return matchesAtStart(this.re, text, lowered);
  }

  private charge(text: string): void {
    if (this.re.literal) return;
    this.text += text.length;
    if (this.text > MAX_REGEX_TEXT)
      throw invalidArgument(
        `regex matches too broadly: it would run over more than ${MAX_REGEX_TEXT} characters of names ` +
          "and text; add literal text to the pattern, narrow the search (a task type, a view), " +
          "or use full-text search",
      );
  }
}

/**
 * `docs` in tie-break order: few are sorted by rank; many are picked from the tie order through a
 * mask (no sort; a plain array, since a generator allocates a result object per doc it yields).
 */
function inTieOrder(index: PatternDocs, docs: Int32Array): Int32Array {
  if (docs.length <= 256)
    return Int32Array.from(docs, (d) => index.tieRank[d] as number)
      .sort()
      .map((rank) => index.tieOrder[rank] as number);
  const mask = new Uint8Array(index.docCount);
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
