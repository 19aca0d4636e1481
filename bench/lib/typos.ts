/**
 * Seeded character edits for the typo-robustness rows (`slips`: the typing slips people make,
 * transposition-heavy, see typingSlip): one or two words of a query (letters only, at
 * least five long, so a word keeps enough of itself to be recognisable) get one edit each — a
 * deletion, an insertion, a substitution or a transposition of neighbours — never on the first letter
 * (people rarely mistype it, and the ranker relies on that). Deterministic per query id.
 */
const EDITS = ["deletion", "insertion", "substitution", "transposition"] as const;
const LETTERS = "abcdefghijklmnopqrstuvwxyz";

export function injectTypos(query: string, id: string, slips = false): string {
  const random = mulberry32(hash(id));
  const edit = slips ? typingSlip : anyEdit;
  const words = query.split(/(\s+)/);
  const editable = words.map((w, i) => (/^[A-Za-z]{5,}$/.test(w) ? i : -1)).filter((i) => i >= 0);
  if (editable.length === 0) return query;
  const count = Math.min(editable.length, 1 + Math.floor(random() * 2));
  for (let k = 0; k < count; k++) {
    const at = editable.splice(Math.floor(random() * editable.length), 1)[0] ?? 0;
    words[at] = edit(words[at] ?? "", random);
  }
  return words.join("");
}

function anyEdit(word: string, random: () => number): string {
  const kind = EDITS[Math.floor(random() * EDITS.length)];
  // Positions 1 .. length-1: the first letter stays.
  const at = 1 + Math.floor(random() * (word.length - 1));
  const letter = LETTERS[Math.floor(random() * LETTERS.length)] ?? "e";
  switch (kind) {
    case "deletion":
      return word.slice(0, at) + word.slice(at + 1);
    case "insertion":
      return word.slice(0, at) + letter + word.slice(at);
    case "substitution": {
      const other =
        letter === word[at] ? (letter === "z" ? "a" : String.fromCharCode(letter.charCodeAt(0) + 1)) : letter;
      return word.slice(0, at) + other + word.slice(at + 1);
    }
    default: {
      const i = Math.min(at, word.length - 2);
      return word.slice(0, i) + (word[i + 1] ?? "") + (word[i] ?? "") + word.slice(i + 2);
    }
  }
}

/** Keys around each letter on a QWERTY keyboard (same row, and the rows above and below). */
const KEY_NEIGHBOURS: Record<string, string> = {
  q: "wa",
  w: "qesa",
  e: "wrds",
  r: "etfd",
  t: "rygf",
  y: "tuhg",
  u: "yijh",
  i: "uokj",
  o: "iplk",
  p: "ol",
  a: "qwsz",
  s: "awedxz",
  d: "serfcx",
  f: "drtgvc",
  g: "ftyhbv",
  h: "gyujnb",
  j: "huikmn",
  k: "jiolm",
  l: "kop",
  z: "asx",
  x: "zsdc",
  c: "xdfv",
  v: "cfgb",
  b: "vghn",
  n: "bhjm",
  m: "njk",
};

/**
 * A slip as people type them: mostly two neighbouring letters swapped, else a neighbouring key hit
 * instead, a letter dropped, or one typed twice. Never the first letter.
 */
function typingSlip(word: string, random: () => number): string {
  const roll = random();
  const at = 1 + Math.floor(random() * (word.length - 1));
  if (roll < 0.6) {
    const i = Math.min(at, word.length - 2);
    return word.slice(0, i) + (word[i + 1] ?? "") + (word[i] ?? "") + word.slice(i + 2);
  }
  if (roll < 0.8) {
    const around = KEY_NEIGHBOURS[(word[at] ?? "").toLowerCase()] ?? "e";
    return word.slice(0, at) + (around[Math.floor(random() * around.length)] ?? "e") + word.slice(at + 1);
  }
  if (roll < 0.9) return word.slice(0, at) + word.slice(at + 1);
  return word.slice(0, at) + (word[at] ?? "") + word.slice(at);
}

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** A small seeded PRNG (mulberry32): the same query id always gets the same typos. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
