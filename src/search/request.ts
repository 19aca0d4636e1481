/**
 * How search reads a request before ranking: which words are literals (values the request carries,
 * not what it asks for) and which are the action and its objects. "summarise notes.txt" asks to
 * summarise; "txt" must not pull in a tool called fetch_txt.
 */
import { englishWords } from "./dictionary.ts";
import { STOPWORDS, splitWords, stem } from "./text.ts";
import { typoCost } from "./typos.ts";

/** One analysed word of a request. */
export interface RequestWord {
  /** The index term (stemmed, lower-case), as analyze() gives it. */
  readonly term: string;
  /** The word as typed, lower-cased: what typo repair compares with the vocabulary. */
  readonly surface: string;
  /**
   * Part of a value: a URL, e-mail, path, file name, number or id, or text in quotes. Such words
   * weigh less and are never read as typos of catalog words.
   */
  readonly literal: boolean;
}

/** Text in matching quotes that open after a space (or the start) and close before one: not "Messi's". */
const QUOTED =
  /(^|[\s(])(["'`\u201c\u2018])([^"'`\u201c\u201d\u2018\u2019\n]{1,200}?)(["'`\u201d\u2019])(?=$|[\s.,;:!?)])/g;
const URL = /^(?:[a-z][a-z0-9+.-]*:\/\/|www\.)/i;
const EMAIL = /^[^@\s]+@[^@\s]+\.[a-z]{2,}$/i;
const FILE_NAME = /^[\p{L}\p{N}_-][\p{L}\p{N}_.-]*\.[a-z][a-z0-9]{0,4}$/iu;
/** Punctuation around a token that belongs to the sentence, not the token. */
const EDGE_PUNCTUATION = /^[("'`\u201c\u2018[{<]+|[)"'`\u201d\u2019\]}>.,;:!?]+$/gu;

/**
 * The request's words in order, as analyze() gives them (stopwords dropped, stemmed), each with its
 * surface form and whether it belongs to a literal. Linear in the length of the text.
 */
export function readRequest(text: string): RequestWord[] {
  const quoted = quotedSpans(text);
  let span = 0;
  const words: RequestWord[] = [];
  for (const match of text.matchAll(/\S+/g)) {
    const raw = match[0];
    const at = match.index ?? 0;
    // Spans and tokens both come in text order: one pass over each.
    while (span < quoted.length && (quoted[span]?.[1] ?? 0) <= at) span++;
    const inQuotes = at >= (quoted[span]?.[0] ?? Number.POSITIVE_INFINITY);
    const literal = inQuotes || isLiteralToken(raw.replace(EDGE_PUNCTUATION, ""));
    for (const surface of splitWords(raw)) {
      if (STOPWORDS.has(surface)) continue;
      // A number is a value wherever it stands ("postgres:16", "ec2").
      words.push({ term: stem(surface), surface, literal: literal || /^\p{N}+$/u.test(surface) });
    }
  }
  return words;
}

/** Start and end offsets of the quoted stretches of `text`. */
function quotedSpans(text: string): [number, number][] {
  const spans: [number, number][] = [];
  for (const match of text.matchAll(QUOTED)) {
    const from = (match.index ?? 0) + (match[1]?.length ?? 0);
    spans.push([from, from + (match[0].length - (match[1]?.length ?? 0))]);
  }
  return spans;
}

/**
 * A path: from the root or home ("/etc/hosts", "~/scans"), or parts joined by slashes that are not
 * just two words ("src/index.ts", "acme/billing-api"; not "read/write").
 */
function isPath(token: string): boolean {
  if (/^(?:~|\.{1,2})?[/\\]./.test(token)) return true;
  const parts = token.split(/[/\\]/);
  if (parts.length < 2 || parts.some((part) => part === "")) return false;
  return parts.length > 2 || !parts.every((part) => /^\p{L}+$/u.test(part));
}

/**
 * A URL, e-mail address, path, file name, or a token mostly of digits (an id, a number, a version):
 * "~/scans/r1.jpg", "acme/api", "notes.txt", "#4312", "5432", "v1.2". Not words that merely hold a
 * digit ("mp3", "ec2", "s3"): there the letters are the word.
 */
function isLiteralToken(token: string): boolean {
  if (token === "" || /^[A-Za-z]+$/.test(token)) return false;
  if (URL.test(token) || EMAIL.test(token)) return true;
  if (isPath(token)) return true;
  if (FILE_NAME.test(token) && /\p{L}/u.test(token.slice(0, token.lastIndexOf(".")))) return true;
  let digits = 0;
  let alphanumerics = 0;
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    if (code >= 48 && code <= 57) digits++;
    // Letters of any script count; outside ASCII, only the rare character needs the Unicode test.
    if ((code >= 48 && code <= 57) || ((code | 32) >= 97 && (code | 32) <= 122)) alphanumerics++;
    else if (code > 127 && /[\p{L}\p{N}]/u.test(token[i] as string)) alphanumerics++;
  }
  return digits > 0 && (token.startsWith("#") || digits >= 4 || digits * 2 >= alphanumerics);
}

/** Stopwords long enough to be mistyped recognisably, by first letter (typos keep the first letter). */
const LONG_STOPWORDS: ReadonlyMap<string, readonly string[]> = (() => {
  const byLetter = new Map<string, string[]>();
  for (const word of STOPWORDS)
    if (word.length >= 4) byLetter.set(word[0] as string, [...(byLetter.get(word[0] as string) ?? []), word]);
  return byLetter;
})();

/**
 * The stopword a word that is neither a stopword nor an English word is a slip for ("colud" → could,
 * "thier" → their), else undefined: read as a catalog word it would pull in "cloud" or "third". A
 * caller keeps the word when the catalog has it as typed.
 */
export function stopwordSlipOf(surface: string): string | undefined {
  if (surface.length < 4 || STOPWORDS.has(surface) || englishWords().has(surface)) return undefined;
  let best: string | undefined;
  let bestCost = STOPWORD_SLIP_COST;
  for (const stopword of LONG_STOPWORDS.get(surface[0] as string) ?? []) {
    const cost = typoCost(surface, stopword, bestCost);
    if (cost <= bestCost) {
      best = stopword;
      bestCost = cost;
    }
  }
  return best;
}

/** One edit (a swap, a neighbouring key, a dropped or added letter). */
const STOPWORD_SLIP_COST = 0.9;

/**
 * Words that move a request on to another intent. Those marked `anywhere` do so wherever they stand
 * ("check X then do Y"); the others only after a comma or a sentence's end, since inside a sentence
 * they are usually ordinary words ("the next meeting", "I also want"). Plain "and" is not one: it
 * joins the objects of one intent far more often ("pods and services").
 */
const MARKERS: readonly { readonly words: readonly string[]; readonly anywhere: boolean }[] = [
  ...["and then", "then", "after that", "and also", "as well as"].map((m) => ({
    words: m.split(" "),
    anywhere: true,
  })),
  ...[
    "afterwards",
    "additionally",
    "also",
    "plus",
    "next",
    "finally",
    "furthermore",
    "moreover",
    "besides",
  ].map((m) => ({ words: [m], anywhere: false })),
];

/** Content words a clause needs to be an intent of its own ("Thanks!" is not). */
const CLAUSE_MIN_WORDS = 3;
/** Clauses read per request at most: the rest are searched with the last one. */
const MAX_CLAUSES = 6;

/**
 * The intents of a request with several ("find the repo's open issues, then post a summary to
 * #eng"): its substantial clauses, or none when it has fewer than two. Clauses end at a sentence's
 * end, a semicolon or a marker (MARKERS). One pass over the words. Each clause is searched by meaning
 * on its own, so the second intent's tools are not crowded out by the first's neighbours.
 */
export function requestClauses(text: string): string[] {
  const parts: string[][] = [[]];
  const words = text.split(/\s+/).filter((word) => word !== "");
  let atBoundary = true;
  for (let i = 0; i < words.length; i++) {
    const marker = MARKERS.find(
      (m) =>
        (m.anywhere || atBoundary) &&
        m.words.every((w, k) => (words[i + k] ?? "").toLowerCase().replace(/[,:]$/, "") === w),
    );
    if (marker) {
      if ((parts.at(-1)?.length ?? 0) > 0) parts.push([]);
      i += marker.words.length - 1;
      atBoundary = false;
      continue;
    }
    const word = words[i] as string;
    // A sentence ends at . ? ! or ; closing a word (not inside one: "v1.2", "example.com").
    const ends = /[.?!;]+$/.exec(word);
    const kept = ends ? word.slice(0, ends.index) : word;
    if (kept !== "") parts.at(-1)?.push(kept);
    if (ends) parts.push([]);
    atBoundary = ends !== null || word.endsWith(",");
  }
  const clauses: string[] = [];
  for (const part of parts) {
    const clause = part.join(" ").replace(/[,:]$/, "");
    if (readRequest(clause).filter((w) => !w.literal).length < CLAUSE_MIN_WORDS) continue;
    if (clauses.length < MAX_CLAUSES) clauses.push(clause);
    else clauses[MAX_CLAUSES - 1] = `${clauses[MAX_CLAUSES - 1]} ${clause}`;
  }
  return clauses.length >= 2 ? clauses : [];
}
