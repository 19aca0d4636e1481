import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compileCallerRegex,
  fold,
  matches,
  matchesAtStart,
  matchesWhole,
} from "../../src/text/caller-regex.ts";

const letters = fc.constantFrom("a", "B", "c", "_", "-", ".", " ", "\n", "K", "ſ");
const text = fc.string({ unit: letters, maxLength: 12 });
const literal = fc.string({
  unit: fc.constantFrom("a", "b", "C", "_", "-", "\\.", " "),
  minLength: 1,
  maxLength: 4,
});
const pattern = fc
  .tuple(fc.boolean(), literal, fc.boolean())
  .map(([anchored, body, openEnd]) => `${anchored ? "^" : ""}${body}${openEnd ? ".*" : ""}`);

describe("caller regex: plain literal patterns", () => {
  it("are matched without RE2", () => {
    expect(compileCallerRegex("get_weather").literal).toEqual({
      text: "get_weather",
      anchored: false,
      openEnd: false,
    });
    expect(compileCallerRegex("^GitHub\\.create.*").literal).toEqual({
      text: "github.create",
      anchored: true,
      openEnd: true,
    });
    expect(compileCallerRegex("github.create").literal).toBeUndefined(); // `.` is any character
    expect(compileCallerRegex("send_(email|sms)").literal).toBeUndefined();
  });

  it("match exactly what RE2 matches, anywhere, whole and at the start", () => {
    fc.assert(
      fc.property(pattern, text, (p, t) => {
        const re = compileCallerRegex(p);
        const viaRe2 = { ...re, literal: undefined };
        const lowered = fold(t);
        expect(matches(re, t, lowered)).toBe(matches(viaRe2, t, lowered));
        expect(matchesWhole(re, t, lowered)).toBe(matchesWhole(viaRe2, t, lowered));
        expect(matchesAtStart(re, t, lowered)).toBe(matchesAtStart(viaRe2, t, lowered));
      }),
      { numRuns: 3000 },
    );
  });
});
