import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { typoCost } from "../../src/search/typos.ts";

/** Keys that touch on a QWERTY keyboard, among the letters the property uses (both orders). */
const NEIGHBOURS = new Set(
  ["qw", "qa", "ws", "wa", "we", "ed", "es", "er", "rd", "op", "as", "sd"].flatMap((p) => [
    p,
    `${p[1]}${p[0]}`,
  ]),
);

/**
 * The same cost model over the whole table, written plainly: the reference the banded version must
 * match. Costs: swap 0.5, neighbouring key 0.7,
 * other letter 1, a doubled or halved letter 0.6, another extra or missing letter 0.9.
 */
function reference(typed: string, intended: string): number {
  const extra = (i: number) => (typed[i] === typed[i - 1] || typed[i] === typed[i + 1] ? 0.6 : 0.9);
  const missing = (j: number) =>
    intended[j] === intended[j - 1] || intended[j] === intended[j + 1] ? 0.6 : 0.9;
  const rows: number[][] = [];
  for (let i = 0; i <= typed.length; i++) {
    const row: number[] = [];
    for (let j = 0; j <= intended.length; j++) {
      if (i === 0 && j === 0) row.push(0);
      else if (i === 0) row.push((row[j - 1] as number) + missing(j - 1));
      else if (j === 0) row.push(((rows[i - 1] as number[])[0] as number) + extra(i - 1));
      else {
        const up = rows[i - 1] as number[];
        const a = typed[i - 1] as string;
        const b = intended[j - 1] as string;
        const change = a === b ? 0 : NEIGHBOURS.has(a + b) ? 0.7 : 1;
        let v = Math.min(
          (up[j] as number) + extra(i - 1),
          (row[j - 1] as number) + missing(j - 1),
          (up[j - 1] as number) + change,
        );
        if (i > 1 && j > 1 && a !== b && a === intended[j - 2] && typed[i - 2] === b)
          v = Math.min(v, ((rows[i - 2] as number[])[j - 2] as number) + 0.5);
        row.push(v);
      }
    }
    rows.push(row);
  }
  return (rows[typed.length] as number[])[intended.length] as number;
}

describe("typoCost", () => {
  it("equals the whole-table weighted distance up to max, and Infinity beyond it", () => {
    const word = fc.string({
      unit: fc.constantFrom("a", "s", "d", "q", "w", "e", "r", "o", "p"),
      maxLength: 40,
    });
    fc.assert(
      fc.property(word, word, fc.constantFrom(0.5, 1, 2, 3), (typed, intended, max) => {
        const expected = reference(typed, intended);
        const cost = typoCost(typed, intended, max);
        if (expected <= max + 1e-9) expect(cost).toBeCloseTo(expected, 9);
        else expect(cost).toBe(Number.POSITIVE_INFINITY);
      }),
      { numRuns: 3000 },
    );
  });

  it("counts a swap that reaches past a row over the limit on its own", () => {
    // Found by the property above: the row between the swap's ends costs more than max.
    expect(typoCost("dwrsoa", "areao", 3)).toBeCloseTo(2.8, 9);
  });

  it("costs a swap of neighbouring letters least, so a transposed word is read as itself", () => {
    // "stauts" is one swap from "status" and one other letter from "starts".
    expect(typoCost("stauts", "status", 2)).toBeLessThan(typoCost("stauts", "starts", 2));
    expect(typoCost("opne", "open", 2)).toBeLessThan(typoCost("opne", "one", 2));
  });

  it("costs a key next to the right one less than any other wrong letter", () => {
    expect(typoCost("wrao", "wrap", 2)).toBeLessThan(typoCost("wrab", "wrap", 2));
  });

  it("costs a doubled letter typed once, or a letter typed twice, less than another missing or extra one", () => {
    expect(typoCost("comit", "commit", 2)).toBeLessThan(typoCost("commt", "commit", 2));
    expect(typoCost("commmit", "commit", 2)).toBeLessThan(typoCost("commxit", "commit", 2));
  });
});
