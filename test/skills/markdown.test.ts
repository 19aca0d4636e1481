import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseHeading, parseMarkdownBody } from "../../src/skills/markdown.ts";

/** The heading regex parseHeading replaces: the specification of what a heading is. */
const REFERENCE_HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;

describe("markdown headings", () => {
  it("parses a heading line exactly as the reference regex does", () => {
    const piece = fc.constantFrom(..."# \t\u00a0\u2028\rab#-", "##", "   ", "title");
    const line = fc.array(piece, { maxLength: 20 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(line, (text) => {
        const m = REFERENCE_HEADING.exec(text);
        expect(parseHeading(text)).toEqual(m ? { level: m[1]?.length, text: m[2] } : undefined);
      }),
      { numRuns: 5000 },
    );
  });

  it("parses a heading with thousands of inner spaces without stalling", () => {
    // The reference regex took 5 s on this line (cubic in the run of spaces).
    const line = `# a${" ".repeat(2000)}x`;
    const started = performance.now();
    const parts = parseMarkdownBody(`${line}\n\n1. step`);
    expect(performance.now() - started).toBeLessThan(250);
    expect(parts.title).toBe(line.slice(2));
  });
});
