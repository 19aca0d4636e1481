import { typoCost } from "./typos.ts";

/** How an unknown query word was read: a vocabulary term within a few edits, by prefix, or as an abbreviation. */
export type ExpansionKind = "typo" | "prefix" | "abbreviation";

/** A vocabulary term an unknown query word is searched as. */
export interface Expansion {
  readonly id: number;
  /** Similarity in (0, 1]. */
  readonly weight: number;
  readonly kind: ExpansionKind;
}

/**
 * The vocabulary terms (ids into `terms`) an unknown query word (typed as `surface`) may be read as,
 * best first: within the typo budget, by prefix, or as an abbreviation. `byFirstChar` lists the
 * term ids of each first letter, sorted by length.
 */
export function expansionsOf(
  word: string,
  surface: string,
  terms: readonly string[],
  byFirstChar: ReadonlyMap<string, Int32Array>,
): Expansion[] {
  const len = word.length;
  if (len < 2) return [];
  const maxCost = typoBudget(surface.length);
  const found: Expansion[] = [];
  // Typos rarely hit the first letter: only that letter's terms are read, and of those (sorted by
  // length) none shorter than the cheapest edits allow.
  const bucket = byFirstChar.get(word[0] ?? "") ?? new Int32Array(0);
  const shortest = len - Math.floor(maxCost / CHEAPEST_DROP);
  for (let i = firstWithLength(bucket, terms, shortest); i < bucket.length; i++) {
    const id = bucket[i] as number;
    const t = terms[id] ?? "";
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

/**
 * The typo cost (src/search/typos.ts) a word typed this long may carry: none up to 3 letters, one plain
 * edit (or two swaps) up to 7, then two.
 */
function typoBudget(length: number): number {
  if (length <= 3) return 0;
  return length <= 7 ? 1 : 2;
}

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
export function spellRepair(typed: string, stemmed: string): string {
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
