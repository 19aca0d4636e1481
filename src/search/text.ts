/**
 * Identifier-aware text analysis of the in-memory search index and of queries.
 * Identifiers split on snake_case, camelCase, kebab-case, dots and `server__tool`; words are
 * lower-cased and lightly stemmed so "creating", "created" and "create" meet.
 */

import { LruCache } from "../lru.ts";

// Common English function words plus conversational request filler ("please", "could you").
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a an the and or but if then else of to in on at by for with from into onto about as is are was were be been being " +
    "am do does did doing have has had having i me my mine we us our you your yours he him his she her it its they them " +
    "their this that these those there here what which who whom whose when where why how all any both each few more most " +
    "other some such no nor not only own same so than too very s t can could will would shall should may might must " +
    "just also please thanks thank like want wants wanted need needs needed help let lets know tell give provide " +
    "hi hello hey ok okay im ive id ill youre dont doesnt cant wont up out over under again further once very really " +
    "something anything everything someone anyone some way able"
  ).split(" "),
);

const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/u;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const UPPER = /\p{Lu}/u;

// Character classes for the scanner: 0 other, 1 lower, 2 upper, 3 digit, 4 CJK (one word each).
// ASCII, nearly all of a tool catalog, is one table lookup.
const ASCII_CLASS = Uint8Array.from({ length: 128 }, (_, code) =>
  code >= 97 && code <= 122 ? 1 : code >= 65 && code <= 90 ? 2 : code >= 48 && code <= 57 ? 3 : 0,
);

/** The class of a character outside ASCII. */
function nonAsciiClassOf(ch: string): number {
  if (CJK.test(ch)) return 4;
  if (!LETTER_OR_DIGIT.test(ch)) return 0;
  return UPPER.test(ch) ? 2 : /\p{N}/u.test(ch) ? 3 : 1;
}

/**
 * Splits text into lower-case words, breaking identifiers apart (fooBar, HTTPServer, v2api, a_b,
 * a-b, a.b). CJK text becomes single characters. A hand-rolled scanner: this runs over every
 * description at index time.
 */
export function splitWords(text: string): string[] {
  const out: string[] = [];
  let start = -1;
  let prev = 0;
  const n = text.length;
  for (let i = 0; i <= n; i++) {
    const code = i < n ? text.charCodeAt(i) : 32;
    // Surrogate pairs (rare letters outside the BMP) are treated as separators.
    const cls = i >= n ? 0 : code < 128 ? (ASCII_CLASS[code] as number) : nonAsciiClassOf(text[i] ?? "");
    if (start >= 0) {
      let boundary = cls === 0 || cls === 4 || prev === 4;
      if (!boundary) {
        if (cls === 2 && (prev === 1 || prev === 3))
          boundary = true; // fooBar, v2Api
        else if (cls === 3 && prev !== 3)
          boundary = true; // v2
        else if (prev === 3 && cls !== 3)
          boundary = true; // 2fa
        else if (cls === 1 && prev === 2 && i - start > 1) {
          // HTTPServer: the last upper letter starts the next word.
          out.push(text.slice(start, i - 1).toLowerCase());
          start = i - 1;
        }
      }
      if (boundary) {
        out.push(text.slice(start, i).toLowerCase());
        start = -1;
      }
    }
    if (start < 0 && cls !== 0) start = i;
    prev = cls;
  }
  return out;
}

const VOWEL = /[aeiouy]/;

/**
 * Bounded, so a flood of unique tokens cannot grow memory without limit; the oldest stem goes first.
 * Hits are peeks: stemming runs for every token of every build, and reordering on each would cost
 * more than the rare recomputation of an evicted word.
 */
const stemCache = new LruCache<string, string>(200_000);

/** A light English stemmer: plurals, -ing, -ed, a few derivations, trailing e. Memoised. */
export function stem(word: string): string {
  let cached = stemCache.peek(word);
  if (cached === undefined) {
    cached = stemUncached(word);
    stemCache.set(word, cached);
  }
  return cached;
}

function stemUncached(word: string): string {
  let w = word;
  if (w.length <= 3 || !/^[a-z]+$/.test(w)) return w;
  if (w.endsWith("sses")) w = w.slice(0, -2);
  else if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/(xes|ches|shes|zes)$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith("s") && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.endsWith("ing") && w.length > 5 && VOWEL.test(w.slice(0, -3))) w = undouble(w.slice(0, -3));
  else if (w.endsWith("ed") && !w.endsWith("eed") && w.length > 4 && VOWEL.test(w.slice(0, -2)))
    w = undouble(w.slice(0, -2));
  for (let pass = 0; pass < 2; pass++)
    for (const [suffix, replacement, minStem] of DERIVATIONS)
      if (w.endsWith(suffix) && w.length - suffix.length >= minStem) {
        w = w.slice(0, -suffix.length) + replacement;
        break;
      }
  if (w.length > 3 && w.endsWith("y")) w = `${w.slice(0, -1)}i`;
  if (w.endsWith("e") && w.length > 4) w = w.slice(0, -1);
  return w;
}

// Derivational suffixes (a small part of Porter's steps 2-4), longest first.
const DERIVATIONS: readonly [string, string, number][] = [
  ["izations", "", 4],
  ["ization", "", 4],
  ["ational", "", 5],
  ["fulness", "", 4],
  ["ations", "", 5],
  ["ation", "", 5],
  ["ments", "", 4],
  ["ment", "", 4],
  ["ness", "", 4],
  ["ize", "", 4],
  ["iz", "", 4],
  ["ise", "", 4],
  ["ful", "", 4],
  ["er", "", 4],
  ["ly", "", 4],
];

function undouble(w: string): string {
  return /([bdfgmnprt])\1$/.test(w) ? w.slice(0, -1) : w;
}

/** Words → index terms: stemmed, stopwords dropped. */
export function analyze(text: string): string[] {
  const out: string[] = [];
  for (const w of splitWords(text)) {
    if (STOPWORDS.has(w)) continue;
    out.push(stem(w));
  }
  return out;
}

/** Case- and separator-insensitive key of a name: `Send-Message`, `sendMessage` → `sendmessage`. */
export function nameKey(name: string): string {
  return name.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
}

/** The part after the last namespace separator (`.` or MCP-style `__`). */
export function bareName(name: string): string {
  const dot = name.lastIndexOf(".");
  const tail = dot >= 0 ? name.slice(dot + 1) : name;
  const dunder = tail.indexOf("__");
  return dunder >= 0 ? tail.slice(dunder + 2) : tail;
}
