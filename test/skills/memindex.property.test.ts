import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryIndex, partitionKey, tokenize } from "../../src/skills/memindex.ts";
import { fixture, GLOBAL } from "./helpers.ts";

/**
 * The in-memory index intersects AND queries by galloping from the rarest term and keeps candidates in
 * scratch buffers; this checks it against a plain BM25F scorer written from the formula, on random
 * small catalogs: same hits, same order (relevance, then shorter name, then name), same relevance.
 */

const WORDS = ["alpha", "beta", "gamma", "delta", "omega"] as const;
const WEIGHTS = { name: 6, title: 3, trigger: 3, description: 1, tags: 2 } as const;
const K1 = 1.2;
const B = 0.75;

interface Doc {
  name: string;
  title: string;
  trigger: string;
  description: string;
  tags: string[];
}

const words = fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 4 }).map((w) => w.join(" "));
const catalog = fc.uniqueArray(
  fc.record({
    name: fc.stringMatching(/^[a-z]{1,6}$/),
    title: words,
    trigger: words,
    description: words,
    tags: fc.array(fc.constantFrom(...WORDS), { maxLength: 2 }),
  }),
  { minLength: 1, maxLength: 30, selector: (doc) => doc.name },
);
const query = fc.array(fc.constantFrom(...WORDS, "missing"), { minLength: 1, maxLength: 3 });

function reference(docs: readonly Doc[], terms: readonly string[], mode: "and" | "or", k: number) {
  const tfs = docs.map((doc) => {
    const tf = new Map<string, number>();
    let length = 0;
    for (const [field, weight] of Object.entries(WEIGHTS)) {
      const value = doc[field as keyof Doc];
      for (const term of tokenize(Array.isArray(value) ? value.join(" ") : value)) {
        tf.set(term, (tf.get(term) ?? 0) + weight);
        length += weight;
      }
    }
    return { tf, length };
  });
  const average = tfs.reduce((sum, d) => sum + d.length, 0) / docs.length;
  const hits = docs.flatMap((doc, i) => {
    const { tf, length } = tfs[i] as (typeof tfs)[number];
    const present = terms.filter((t) => tf.has(t));
    if (present.length === 0 || (mode === "and" && present.length < terms.length)) return [];
    let relevance = 0;
    for (const term of present) {
      const df = tfs.filter((d) => d.tf.has(term)).length;
      const idf = Math.log(1 + (docs.length - df + 0.5) / (df + 0.5));
      const f = tf.get(term) as number;
      relevance += (idf * f * (K1 + 1)) / (f + K1 * (1 - B + (B * length) / average));
    }
    return [{ name: doc.name, relevance }];
  });
  hits.sort(
    (a, b) => b.relevance - a.relevance || a.name.length - b.name.length || (a.name < b.name ? -1 : 1),
  );
  return hits.slice(0, k);
}

describe("in-memory skill index", () => {
  it("ranks AND and OR queries exactly as BM25F computed from the formula", () => {
    fc.assert(
      fc.property(
        catalog,
        query,
        fc.constantFrom("and" as const, "or" as const),
        fc.integer({ min: 1, max: 10 }),
        (docs, terms, mode, k) => {
          const { db, service } = fixture();
          service.loadSkillPack({
            pack: "p",
            scope: GLOBAL,
            files: [
              {
                path: "all.skill.jsonl",
                content: docs.map((doc) => JSON.stringify({ ...doc, steps: ["step"] })).join("\n"),
              },
            ],
          });
          const index = MemoryIndex.build(db);
          // OR with duplicate terms counts a term twice in both; keep the comparison to distinct terms.
          const distinct = [...new Set(terms)];
          const got = index.search(distinct, mode, new Set([partitionKey("global", "", "")]), undefined, k);
          const expected = reference(docs, distinct, mode, k);
          expect(got.map((hit) => hit.name)).toEqual(expected.map((hit) => hit.name));
          for (const [i, hit] of got.entries())
            expect(hit.relevance).toBeCloseTo(expected[i]?.relevance ?? Number.NaN, 9);
        },
      ),
      { numRuns: 150 },
    );
  });
});
