import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LiteralIndex } from "../../src/search/literal-index.ts";

const field = fc.stringMatching(/^[abc_.]{0,12}$/);
const docs = fc.array(fc.array(field, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 40 });
const literal = fc.stringMatching(/^[abc_.]{1,5}$/);

/** What a regex with these literals could match: some field starts with the prefix, each literal is in some field. */
function couldMatch(fields: readonly string[], literals: readonly string[], prefix: string): boolean {
  return (
    (!prefix || fields.some((f) => f.startsWith(prefix))) &&
    literals.every((lit) => fields.some((f) => f.includes(lit)))
  );
}

describe("LiteralIndex", () => {
  it("never drops a doc that could match the pattern's literals and prefix", () => {
    fc.assert(
      fc.property(
        docs,
        fc.array(literal, { maxLength: 3 }),
        fc.option(literal, { nil: "" }),
        (all, literals, prefix) => {
          const index = LiteralIndex.build(all.length, (d) => all[d] ?? []);
          const candidates = index.candidates(literals, prefix);
          const kept = new Set(candidates ?? all.map((_, d) => d));
          all.forEach((fields, d) => {
            if (couldMatch(fields, literals, prefix)) expect(kept.has(d)).toBe(true);
          });
          if (candidates) expect([...candidates]).toEqual([...new Set(candidates)].sort((a, b) => a - b));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("narrows to the docs holding a literal's trigrams, and to fields starting with the prefix", () => {
    const fields = [
      ["get_weather", "Current weather"],
      ["send_message", "Send a chat message"],
      ["get_time", ""],
    ];
    const index = LiteralIndex.build(fields.length, (d) => fields[d] ?? []);
    expect([...(index.candidates(["weather"], "") ?? [])]).toEqual([0]);
    expect([...(index.candidates([], "get_") ?? [])]).toEqual([0, 2]);
    expect([...(index.candidates(["time"], "get_") ?? [])]).toEqual([2]);
    expect([...(index.candidates(["zebra"], "") ?? [])]).toEqual([]);
  });

  it("finds exactly the docs with a field starting with a prefix, over more fields than one sorted run", () => {
    // 10,000 fields in a scrambled order: sorted in several runs, then merged.
    const fields = Array.from({ length: 5_000 }, (_, d) => [
      `t${(d * 7_919) % 5_000}_${d % 3 === 0 ? "get" : "set"}`,
      `${d % 11 === 0 ? "get" : "put"}_${(d * 31) % 97}`,
    ]);
    const index = LiteralIndex.build(fields.length, (d) => fields[d] ?? []);
    for (const prefix of ["t1", "t4999_", "get_", "put_9", "t12", "z"]) {
      const expected = fields.flatMap((docFields, d) =>
        docFields.some((f) => f.startsWith(prefix)) ? [d] : [],
      );
      expect([...(index.candidates([], prefix) ?? [])]).toEqual(expected);
    }
  });

  it("cannot narrow literals shorter than a trigram without a prefix", () => {
    const index = LiteralIndex.build(1, () => ["ab"]);
    expect(index.candidates(["ab"], "")).toBeUndefined();
  });

  it("builds the same index in slices as in one go", async () => {
    const fields = Array.from({ length: 3000 }, (_, d) => [
      `tool_${d}_${d % 7 === 0 ? "weather" : "mail"}`,
      `text ${d}`,
    ]);
    const sliced = await LiteralIndex.buildInSlices(
      fields.length,
      (d) => fields[d] ?? [],
      () => true,
    );
    const whole = LiteralIndex.build(fields.length, (d) => fields[d] ?? []);
    for (const [literals, prefix] of [
      [["weather"], ""],
      [["mail"], "tool_12"],
      [[], "tool_2999"],
    ] as const)
      expect(sliced?.candidates(literals, prefix)).toEqual(whole.candidates(literals, prefix));
  });

  it("lets other work run between slices, none of them long", async () => {
    const fields = Array.from({ length: 20_000 }, (_, d) => [
      `tool_${d}`,
      "a description of some length ".repeat(8),
    ]);
    let longestGap = 0;
    let last = performance.now();
    let building = true;
    const ticker = (async () => {
      while (building) {
        await new Promise((resolve) => setImmediate(resolve));
        const now = performance.now();
        longestGap = Math.max(longestGap, now - last);
        last = now;
      }
    })();
    await LiteralIndex.buildInSlices(
      fields.length,
      (d) => fields[d] ?? [],
      () => true,
    );
    building = false;
    await ticker;
    // A slice is ~10 ms of work; the budget is wide for a loaded machine (one-shot: ~1 s).
    expect(longestGap).toBeLessThan(150);
  });

  it("stops when the index is no longer wanted", async () => {
    let wanted = true;
    const build = LiteralIndex.buildInSlices(
      20_000,
      (d) => [`tool_${d}`],
      () => wanted,
    );
    wanted = false;
    expect(await build).toBeUndefined();
  });
});
