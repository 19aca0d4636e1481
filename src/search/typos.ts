/**
 * How likely a typed word is a slip for a known word: a weighted Damerau–Levenshtein distance (optimal
 * string alignment) whose costs follow how people mistype. Swapping two neighbouring letters is the
 * commonest slip and costs least; hitting a key next to the right one costs less than any other wrong
 * letter; a doubled letter typed once, or a letter typed twice, is a cheap drop or insertion.
 */

/** Costs of one edit, from typed word to intended word. */
const COST = {
  transposition: 0.5,
  neighbourKey: 0.7,
  substitution: 1,
  /** A letter typed twice ("commmit"), or a double letter typed once ("comit"). */
  doubling: 0.6,
  insertion: 0.9,
  deletion: 0.9,
} as const;

/** Cheapest single edit: how many edits a cost bound can hold (the band of the table to fill). */
const CHEAPEST = Math.min(...Object.values(COST));

const KEYBOARD_ROWS = ["qwertyuiop", "asdfghjkl", "zxcvbnm"] as const;

/** Letter pairs whose keys touch on a QWERTY keyboard, as "ab" strings (both orders). */
const NEIGHBOURS: ReadonlySet<string> = (() => {
  const pairs = new Set<string>();
  KEYBOARD_ROWS.forEach((row, r) => {
    for (let i = 0; i < row.length; i++) {
      const key = row[i] as string;
      const around = [row[i - 1], row[i + 1], KEYBOARD_ROWS[r - 1]?.[i], KEYBOARD_ROWS[r - 1]?.[i + 1]];
      around.push(KEYBOARD_ROWS[r + 1]?.[i], KEYBOARD_ROWS[r + 1]?.[i - 1]);
      for (const other of around)
        if (other !== undefined) {
          pairs.add(key + other);
          pairs.add(other + key);
        }
    }
  });
  return pairs;
})();

function substitutionCost(typed: number, intended: number): number {
  return NEIGHBOURS.has(String.fromCharCode(typed, intended)) ? COST.neighbourKey : COST.substitution;
}

/** Rows of the table, reused: repair compares one word with thousands of vocabulary words. */
let rows: [Float64Array, Float64Array, Float64Array] = [
  new Float64Array(64),
  new Float64Array(64),
  new Float64Array(64),
];

/**
 * The weighted edit cost of reading `typed` as `intended`, or Infinity once it passes `max`. Only the
 * band of cells that `max` can reach from the diagonal is filled, so the work is linear in the length.
 */
export function typoCost(typed: string, intended: string, max: number): number {
  const n = typed.length;
  const m = intended.length;
  const band = Math.floor(max / CHEAPEST);
  if (Math.abs(n - m) > band) return Number.POSITIVE_INFINITY;
  if (rows[0].length <= m) rows = [new Float64Array(m + 1), new Float64Array(m + 1), new Float64Array(m + 1)];
  let [before, prev, cur] = rows;
  const far = Number.POSITIVE_INFINITY;
  // Row 0: the intended word's first j letters all missing from what was typed.
  prev[0] = 0;
  for (let j = 1; j <= m; j++)
    prev[j] = j <= band ? (prev[j - 1] as number) + deletionCost(intended, j - 1) : far;
  let lastRowMin = 0;
  for (let i = 1; i <= n; i++) {
    const lo = Math.max(1, i - band);
    const hi = Math.min(m, i + band);
    cur[lo - 1] = lo === 1 && i <= band ? insertionsUpTo(typed, i) : far;
    let rowMin = cur[lo - 1] as number;
    const a = typed.charCodeAt(i - 1);
    for (let j = lo; j <= hi; j++) {
      const b = intended.charCodeAt(j - 1);
      let v = Math.min(
        (prev[j] as number) + insertionCost(typed, i - 1),
        (cur[j - 1] as number) + deletionCost(intended, j - 1),
        (prev[j - 1] as number) + (a === b ? 0 : substitutionCost(a, b)),
      );
      if (i > 1 && j > 1 && a === intended.charCodeAt(j - 2) && typed.charCodeAt(i - 2) === b && a !== b)
        v = Math.min(v, (before[j - 2] as number) + COST.transposition);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (hi < m) cur[hi + 1] = far;
    // A swap reaches this row from the one before the last, so both must be over to give up.
    if (rowMin > max && lastRowMin > max) return far;
    lastRowMin = rowMin;
    [before, prev, cur] = [prev, cur, before];
  }
  const cost = prev[m] as number;
  return cost <= max ? cost : far;
}

/** Cost of the typed letter at `at` being extra: cheap when it repeats its neighbour ("commmit"). */
function insertionCost(typed: string, at: number): number {
  const c = typed.charCodeAt(at);
  return c === typed.charCodeAt(at - 1) || c === typed.charCodeAt(at + 1) ? COST.doubling : COST.insertion;
}

/** Cost of the intended letter at `at` being missing: cheap when it is half of a double ("comit"). */
function deletionCost(intended: string, at: number): number {
  const c = intended.charCodeAt(at);
  return c === intended.charCodeAt(at - 1) || c === intended.charCodeAt(at + 1)
    ? COST.doubling
    : COST.deletion;
}

function insertionsUpTo(typed: string, count: number): number {
  let sum = 0;
  for (let k = 0; k < count; k++) sum += insertionCost(typed, k);
  return sum;
}
