import { describe, expect, it } from "vitest";
import type { ToolExample } from "../../src/discovery/types.ts";
import { renderExamples, schemaSignature } from "../../src/prompt/index.ts";

const ex = (n: number, tags: string[], description = `ex${n}`): ToolExample => ({
  args: { n },
  description,
  tags,
});

describe("renderExamples", () => {
  it("orders minimal → common → edge-case, others last, and caps at 3 by default", () => {
    const lines = renderExamples([
      ex(1, ["other"]),
      ex(2, ["edge-case"]),
      ex(3, ["common"]),
      ex(4, ["minimal"]),
    ]);
    expect(lines).toEqual(['- {"n":4} — ex4', '- {"n":3} — ex3', '- {"n":2} — ex2']);
  });

  it("keeps the tool's own order among equal ranks", () => {
    expect(renderExamples([ex(1, []), ex(2, [])], { max: 5 })).toEqual([
      '- {"n":1} — ex1',
      '- {"n":2} — ex2',
    ]);
  });

  it("filters by tag and can leave descriptions out", () => {
    const lines = renderExamples([ex(1, ["common"]), ex(2, ["edge-case"])], {
      filterTags: ["Edge-Case"],
      includeDescriptions: false,
    });
    expect(lines).toEqual(['- {"n":2}']);
  });

  it("prints args as one line of JSON with sorted keys", () => {
    const lines = renderExamples([
      { args: { b: [1, { y: 2, x: 1 }], a: "s" }, description: "multi\nline", tags: [] },
    ]);
    expect(lines).toEqual(['- {"a":"s","b":[1,{"x":1,"y":2}]} — multi line']);
  });
});

describe("schemaSignature", () => {
  it("renders a compact TypeScript-like signature", () => {
    const sig = schemaSignature({
      type: "object",
      properties: {
        owner: { type: "string", description: "ignored" },
        state: { type: "string", enum: ["open", "closed"] },
        labels: { type: "array", items: { type: "string" } },
        page: { type: "integer" },
        filter: { type: "object", properties: { since: { type: ["string", "null"] } }, required: ["since"] },
        "x-odd": { anyOf: [{ type: "number" }, { type: "boolean" }] },
      },
      required: ["owner"],
    });
    expect(sig).toBe(
      '{owner: string, state?: "open"|"closed", labels?: string[], page?: number, filter?: {since: string|null}, "x-odd"?: number|boolean}',
    );
  });
});
