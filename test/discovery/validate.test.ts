import { describe, expect, it } from "vitest";
import type { ToolInput } from "../../src/discovery/index.ts";
import { recordSteps } from "../../src/discovery/validate.ts";
import { WayfindError } from "../../src/errors.ts";
import type { JsonObject, JsonValue } from "../../src/json.ts";
import { openCatalog } from "./helpers.ts";

/** Registers one tool with this args schema and examples; returns the error it was rejected with. */
async function rejection(
  argsSchema: JsonObject,
  examples: readonly JsonObject[],
): Promise<WayfindError | undefined> {
  const { catalog } = openCatalog();
  const tool: ToolInput = {
    name: "checked",
    argsSchema,
    examples: examples.map((args) => ({ args, description: "", tags: [] })),
  };
  try {
    await catalog.registry.register("s", [tool]);
    return undefined;
  } catch (err) {
    if (err instanceof WayfindError) return err;
    throw err;
  }
}

const stringWithPattern = (pattern: string): JsonObject => ({
  type: "object",
  properties: { code: { type: "string", pattern } },
});

describe("example validation against schema patterns", () => {
  it("rejects an example against a catastrophic-backtracking pattern without stalling", async () => {
    // JavaScript's backtracking RegExp took 6-8 s here; RE2 answers in linear time.
    const started = performance.now();
    const err = await rejection(stringWithPattern("^(a+)+$"), [{ code: "aaaaaaaaaaaaaaaaaaaaaaaaaaa!" }]);
    expect(performance.now() - started).toBeLessThan(250);
    expect(err?.code).toBe("invalid_argument");
    expect(err?.message).toMatch(/example 0 does not match the args schema at \/code: must match pattern/);
  });

  it("accepts an example that matches the pattern", async () => {
    expect(await rejection(stringWithPattern("^(a+)+$"), [{ code: "aaaa" }])).toBeUndefined();
  });

  it("enforces each of several patterns in one schema", async () => {
    const schema: JsonObject = {
      type: "object",
      properties: { a: { type: "string", pattern: "^x+$" }, b: { type: "string", pattern: "^y+$" } },
    };
    expect(await rejection(schema, [{ a: "xx", b: "yy" }])).toBeUndefined();
    expect((await rejection(schema, [{ a: "xx", b: "xx" }]))?.message).toMatch(
      /at \/b: must match pattern "\^y\+\$"/,
    );
  });

  it("checks patternProperties keys with the same engine", async () => {
    const schema: JsonObject = {
      type: "object",
      patternProperties: { "^(a|aa)+$": { type: "integer" } },
    };
    expect(await rejection(schema, [{ aaaa: 1 }])).toBeUndefined();
    expect((await rejection(schema, [{ aaaa: "one" }]))?.message).toMatch(/at \/aaaa: must be integer/);
  });

  it("rejects a pattern RE2 cannot run, naming the tool and the schema path", async () => {
    const schema: JsonObject = {
      type: "object",
      properties: { nested: { type: "object", properties: { code: { type: "string", pattern: "^(?!x)" } } } },
    };
    const err = await rejection(schema, [{ nested: { code: "y" } }]);
    expect(err?.code).toBe("invalid_argument");
    expect(err?.message).toMatch(
      /tool "checked": args schema pattern "\^\(\?!x\)" at \/properties\/nested\/properties\/code\/pattern is not supported: .*RE2 syntax/,
    );
  });

  it("names a patternProperties key RE2 cannot run", async () => {
    const err = await rejection({ type: "object", patternProperties: { "(a)\\1": { type: "integer" } } }, [
      {},
    ]);
    expect(err?.message).toContain(String.raw`at /patternProperties/(a)\1 is not supported`);
  });
});

describe("example validation of uniqueItems", () => {
  const uniqueList: JsonObject = {
    type: "object",
    properties: { xs: { type: "array", uniqueItems: true } },
  };

  it("rejects equal items whatever their key order, naming both", async () => {
    const err = await rejection(uniqueList, [{ xs: [{ a: 1, b: [2] }, { c: 3 }, { b: [2], a: 1 }] }]);
    expect(err?.message).toMatch(/at \/xs: must NOT have duplicate items \(items ## 0 and 2 are identical\)/);
  });

  it("accepts distinct items, as many as an example holds, without stalling", async () => {
    // Ajv's pairwise comparison took 12 s for 20,000 items; an example now holds ≤ 16,384 bytes.
    const xs = Array.from({ length: 1_500 }, (_, i) => ({ a: i }));
    const started = performance.now();
    expect(await rejection(uniqueList, [{ xs }, { xs: [1, "1", [1], { a: 1 }] }])).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(250);
  });
});

describe("bounded args schemas and examples", () => {
  const wide = (properties: number): JsonObject => ({
    type: "object",
    properties: Object.fromEntries(
      Array.from({ length: properties }, (_, i) => [`p${i}`, { type: "string" }]),
    ),
  });

  it("rejects a 2,000-property schema before compiling it, naming the tool and the bound", async () => {
    // Compiling took 3.6 s in one RegisterTools call, then overflowed the stack.
    const started = performance.now();
    const err = await rejection(wide(2_000), [{ p0: "x" }]);
    expect(performance.now() - started).toBeLessThan(250);
    expect(err?.code).toBe("invalid_argument");
    expect(err?.message).toContain('tool "checked": args_schema must have 1–1,000 JSON values');
  });

  const nested = (levels: number): JsonObject => {
    let schema: JsonObject = {};
    for (let level = 1; level < levels; level++) schema = { items: schema };
    return schema;
  };

  it("rejects a schema nested 1,000 levels deep before compiling it", async () => {
    const err = await rejection(nested(1_000), [{}]);
    expect(err?.code).toBe("invalid_argument");
    expect(err?.message).toContain('tool "checked": args_schema must have 1–32 levels of nesting');
  });

  it("answers a schema too deep even to serialise as INVALID_ARGUMENT naming the tool", async () => {
    const err = await rejection(nested(100_000), [{}]);
    expect(err?.code).toBe("invalid_argument");
    expect(err?.message).toMatch(/^tool "checked": could not be read: .*call stack/);
  });

  it("rejects example args nested over 32 levels, naming tool and example index", async () => {
    let tree: JsonValue[] = [];
    for (let level = 1; level < 3_000; level++) tree = [tree];
    const err = await rejection({ type: "object" }, [{}, { tree }]);
    expect(err?.code).toBe("invalid_argument");
    expect(err?.message).toContain('tool "checked": example 1: args must have 1–32 levels of nesting');
  });

  it("rejects example args over 16,384 bytes of JSON, naming tool and example index", async () => {
    const err = await rejection({ type: "object" }, [{ note: "short" }, { note: "x".repeat(16_384) }]);
    expect(err?.code).toBe("invalid_argument");
    expect(err?.message).toContain('tool "checked": example 1: args must have 0–16,384 bytes of JSON');
  });
});

describe("checking a tool in steps", () => {
  const examples = ["a", "b", "c"].map((q) => ({ args: { q }, description: "", tags: [] }));
  const tool: ToolInput = {
    name: "stepped",
    argsSchema: { type: "object", properties: { q: { type: "string", minLength: 1 } } },
    examples,
  };

  /** Runs the steps to their end; how many times they yielded, and the record. */
  const stepThrough = (input: ToolInput) => {
    const steps = recordSteps(input, 0);
    let yields = 0;
    for (let step = steps.next(); ; step = steps.next()) {
      if (step.done) return { yields, record: step.value };
      yields++;
    }
  };

  it("yields before compiling the args schema and before each example, so a slice can end between them", () => {
    expect(stepThrough(tool).yields).toBeGreaterThanOrEqual(1 + examples.length);
  });

  it("ends in the record that registering stores", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [tool]);
    const { source: _source, owner: _owner, ...stored } = catalog.registry.lookup("stepped", "")[0] ?? {};
    expect(stepThrough(tool).record).toEqual(stored);
  });
});
