import { typoCost } from "./typos.ts";

/**
 * The most a slip may cost (src/search/typos.ts) to be repaired against the model's words, by the typed
 * word's length. Names the model does not know are mostly short and one plain slip from some word
 * ("jira" → jia, "redis" → reds, "docker" → docked, "postgres" → postures), so a short word is read
 * as a slip only for the commonest kinds: swapped neighbours up to 5 letters, also a doubled letter
 * typed once or twice up to 7; from 8 letters any one typing slip (a neighbouring key, a dropped or
 * extra letter), but never a plain wrong letter.
 */
function slipBudget(length: number): number {
  if (length <= 5) return 0.5;
  return length <= 7 ? 0.6 : 0.9;
}
/** Words shorter than this are left alone: too many words are one slip from them. */
const MIN_LENGTH = 4;
/** A word cut short ("umbrel", "tomorr") is completed from this many letters on, by at most MAX_ADDED. */
const MIN_PREFIX = 6;
const MAX_ADDED = 3;
/** Longer words are no slip of a word (WordPiece vocabularies hold few over 20 letters). */
const MAX_LENGTH = 32;

/**
 * A sentence model's whole words (its tokenizer's vocabulary), for repairing a request's slips before
 * the model reads it: to the model a typo'd word is a few meaningless word pieces ("umbrel" → um ##bre
 * ##l), so a word it would have known is lost. Words are kept by first letter, sorted by length, in
 * vocabulary order within a length (WordPiece vocabularies list common words first).
 */
export class ModelWords {
  private readonly known: ReadonlySet<string>;
  private readonly byFirst = new Map<string, { words: string[]; ranks: Int32Array }>();

  /** `words`: the vocabulary's whole words, in its order; pieces and short or odd tokens are skipped. */
  constructor(words: readonly string[]) {
    const whole = words.filter((w) => /^\p{Ll}{3,}$/u.test(w) && w.length <= MAX_LENGTH);
    this.known = new Set(whole);
    const lists = new Map<string, { word: string; rank: number }[]>();
    whole.forEach((word, rank) => {
      const key = word[0] ?? "";
      const list = lists.get(key);
      if (list) list.push({ word, rank });
      else lists.set(key, [{ word, rank }]);
    });
    for (const [key, list] of lists) {
      list.sort((a, b) => a.word.length - b.word.length || a.rank - b.rank);
      this.byFirst.set(key, {
        words: list.map((e) => e.word),
        ranks: Int32Array.from(list, (e) => e.rank),
      });
    }
  }

  get size(): number {
    return this.known.size;
  }

  has(word: string): boolean {
    return this.known.has(word);
  }

  /**
   * The model's word a typed word (lowercase) was meant as, or undefined when it is one already or
   * none is close: the one slip away (slipBudget; cheapest, then commonest), else — for a word cut short —
   * the commonest word it begins. Slips rarely hit the first letter, so only words sharing it are read,
   * and only those of a length a slip or completion allows: linear in the word's length for a
   * vocabulary of a given size.
   */
  repair(typed: string): string | undefined {
    const n = typed.length;
    if (n < MIN_LENGTH || n > MAX_LENGTH || this.known.has(typed)) return undefined;
    const bucket = this.byFirst.get(typed[0] ?? "");
    if (bucket === undefined) return undefined;
    const { words, ranks } = bucket;
    const budget = slipBudget(n);
    let typo: { word: string; cost: number; rank: number } | undefined;
    let completion: { word: string; rank: number } | undefined;
    const longest = n + (n >= MIN_PREFIX ? MAX_ADDED : 1);
    for (let i = firstOfLength(words, n - 1); i < words.length; i++) {
      const word = words[i] as string;
      if (word.length > longest) break;
      const rank = ranks[i] as number;
      if (word.length > n && n >= MIN_PREFIX && word.startsWith(typed)) {
        if (completion === undefined || rank < completion.rank) completion = { word, rank };
        continue;
      }
      if (word.length > n + 1 || !oneEditApart(typed, word)) continue;
      const cost = typoCost(typed, word, budget);
      if (
        cost <= budget &&
        (typo === undefined || cost < typo.cost || (cost === typo.cost && rank < typo.rank))
      )
        typo = { word, cost, rank };
    }
    return typo?.word ?? completion?.word;
  }
}

/**
 * Whether one edit (a letter dropped, added or changed, or two neighbours swapped) could turn `a` into
 * `b`: they differ only within two letters of each other. Every slip the budgets allow is one edit, so
 * this cheap test skips most of a bucket before the weighted cost is computed.
 */
function oneEditApart(a: string, b: string): boolean {
  const shorter = Math.min(a.length, b.length);
  let prefix = 0;
  while (prefix < shorter && a.charCodeAt(prefix) === b.charCodeAt(prefix)) prefix++;
  let suffix = 0;
  while (
    suffix < shorter - prefix &&
    a.charCodeAt(a.length - 1 - suffix) === b.charCodeAt(b.length - 1 - suffix)
  )
    suffix++;
  return prefix + suffix >= Math.max(a.length, b.length) - 2;
}

/** Index of the first of `words` (sorted by length) at least `length` long. */
function firstOfLength(words: readonly string[], length: number): number {
  let lo = 0;
  let hi = words.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((words[mid] as string).length < length) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
