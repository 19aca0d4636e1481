import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { boundedEdits } from "../../src/discovery/ranker.ts";

/**
 * Textbook optimal-string-alignment distance (Levenshtein plus swaps of neighbours) over the whole
 * table: the reference the banded version must match.
 */
function osaDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const row = rows[i] as number[];
      const up = rows[i - 1] as number[];
      row[j] = Math.min(
        (up[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (up[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j] as number, ((rows[i - 2] as number[])[j - 2] as number) + 1);
    }
  return (rows[a.length] as number[])[b.length] as number;
}

describe("boundedEdits", () => {
  it("equals the optimal-string-alignment distance up to max, and max + 1 beyond it", () => {
    const word = fc.string({ unit: fc.constantFrom("a", "b", "c", "d"), maxLength: 80 });
    fc.assert(
      fc.property(word, word, fc.integer({ min: 0, max: 3 }), (a, b, max) => {
        expect(boundedEdits(a, b, max)).toBe(Math.min(osaDistance(a, b), max + 1));
      }),
      { numRuns: 2000 },
    );
  });

  it("finds the typos fuzzy search is for", () => {
    expect(boundedEdits("wether", "weather", 2)).toBe(1);
    expect(boundedEdits("screenshoot", "screenshot", 2)).toBe(1);
    expect(boundedEdits("kubernets", "kubernetes", 1)).toBe(1);
    expect(boundedEdits("calender", "calendar", 2)).toBe(1);
    expect(boundedEdits("transalte", "translate", 2)).toBe(1);
    expect(boundedEdits("mermiad", "mermaid", 1)).toBe(1);
    expect(boundedEdits("podcast", "product", 2)).toBe(3);
  });
});
