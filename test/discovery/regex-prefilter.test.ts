import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WayfindError } from "../../src/errors.ts";
import { compileCallerRegex, fold, mayMatch } from "../../src/text/caller-regex.ts";

const PIECES = [
  "a",
  "b",
  "c",
  "ab",
  "_",
  ".",
  "\\.",
  "*",
  "+",
  "?",
  "{2}",
  "^",
  "$",
  "(",
  ")",
  "|",
  "[ab]",
  "\\d",
  "x",
];

describe("regex literal pre-check", () => {
  it("never rejects a string the regex matches (soundness)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 8 }),
        fc.array(fc.stringMatching(/^[abcxAB_.1]{0,12}$/), { minLength: 1, maxLength: 20 }),
        (parts, texts) => {
          let re: ReturnType<typeof compileCallerRegex>;
          try {
            re = compileCallerRegex(parts.join(""));
          } catch (err) {
            if (err instanceof WayfindError) return; // not a valid pattern
            throw err;
          }
          for (const text of texts) if (re.full.test(text)) expect(mayMatch(re, fold(text))).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("extracts literals that let most names skip the regex engine", () => {
    const re = compileCallerRegex("^get_.*weather");
    expect(re.prefixLiteral).toBe("get_");
    expect(re.literals).toEqual(["get_", "weather"]);
    expect(mayMatch(re, "list_pods")).toBe(false);
  });
});
