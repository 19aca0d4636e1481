import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCatalogFile } from "../../src/discovery/index.ts";
import { WayfindError } from "../../src/errors.ts";
import { yamlAliasBomb } from "../support/yaml-bomb.ts";
import { names, openCatalog, tempDir } from "./helpers.ts";

function write(name: string, text: string): string {
  const file = join(tempDir(), name);
  writeFileSync(file, text);
  return file;
}

function failure(fn: () => unknown): WayfindError {
  try {
    fn();
  } catch (err) {
    if (err instanceof WayfindError) return err;
    throw err;
  }
  throw new Error("expected a WayfindError");
}

const schema = { type: "object", properties: { q: { type: "string", description: "query text" } } };

describe("YAML catalog files", () => {
  it("reject aliases that expand past the bound as invalid input naming the file", () => {
    const file = write("laughs.yaml", yamlAliasBomb("tools: []\n"));
    const error = failure(() => parseCatalogFile(file));
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toContain("laughs.yaml");
    expect(error.message).toMatch(/alias/i);
  });
});

describe("catalog file formats", () => {
  it("reads JSONL with wayfind's own fields", () => {
    const file = write(
      "tools.jsonl",
      `${JSON.stringify({ name: "search", description: "Find things", tags: ["t"], side_effects: "read", loading_mode: "always", parameters: schema, examples: [{ args: { q: "x" }, description: "min" }] })}\n\n`,
    );
    const [tool] = parseCatalogFile(file).tools;
    expect(tool).toMatchObject({
      name: "search",
      description: "Find things",
      tags: ["t"],
      sideEffects: "read",
      loadingMode: "always",
      argsSchema: schema,
      examples: [{ args: { q: "x" }, description: "min", tags: [] }],
    });
  });

  it("reads a JSON array of MCP tools/list entries", () => {
    const mcp = {
      name: "read_file",
      title: "Read file",
      description: "Read a file",
      inputSchema: schema,
      outputSchema: { type: "object" },
      annotations: { readOnlyHint: true },
    };
    const [tool] = parseCatalogFile(write("mcp.json", JSON.stringify([mcp]))).tools;
    expect(tool).toMatchObject({
      name: "read_file",
      title: "Read file",
      argsSchema: schema,
      sideEffects: "read",
    });
    expect(tool?.outputSchema).toEqual({ type: "object" });
  });

  it("reads {tools: [...]} with OpenAI function definitions, wrapped or bare", () => {
    const wrapped = { type: "function", function: { name: "a_fn", description: "A", parameters: schema } };
    const bare = { name: "b_fn", description: "B", parameters: schema };
    const parsed = parseCatalogFile(write("openai.json", JSON.stringify({ tools: [wrapped, bare] })));
    expect(parsed.tools.map((t) => [t.name, t.argsSchema])).toEqual([
      ["a_fn", schema],
      ["b_fn", schema],
    ]);
  });

  it("reads YAML with Anthropic input_schema", () => {
    const yaml =
      "tools:\n  - name: get_stock\n    description: Stock price\n    input_schema:\n      type: object\n";
    const [tool] = parseCatalogFile(write("tools.yaml", yaml)).tools;
    expect(tool).toMatchObject({ name: "get_stock", argsSchema: { type: "object" } });
  });

  it("reads OpenAI plugin manifests: human name as title, both descriptions kept, short one first", () => {
    const plugin = {
      name_for_model: "HouseRentingTool",
      name_for_human: "House Renting",
      description_for_human: "Find homes to rent.",
      description_for_model: "Search apartment and condo listings by city, bedrooms and amenities.",
    };
    const [tool] = parseCatalogFile(write("plugins.jsonl", `${JSON.stringify(plugin)}\n`)).tools;
    expect(tool).toMatchObject({
      name: "HouseRentingTool",
      title: "House Renting",
      description:
        "Find homes to rent.\n\nSearch apartment and condo listings by city, bedrooms and amenities.",
    });
  });

  it("prefixes the namespace option and applies the default loading mode", async () => {
    const file = write("t.jsonl", `${JSON.stringify({ name: "ping" })}\n`);
    const parsed = parseCatalogFile(file, { namespace: "k8s", loadingMode: "always" });
    const { catalog } = openCatalog();
    await catalog.registry.register("k8s", parsed.tools);
    expect(catalog.registry.lookup("k8s.ping", "")[0]?.loadingMode).toBe("always");
  });

  it("rewrites names with odd characters and keeps the original as an alias", async () => {
    const file = write("t.jsonl", `${JSON.stringify({ name: "PDF&URL Tool~2" })}\n`);
    const parsed = parseCatalogFile(file);
    expect(parsed.tools[0]).toMatchObject({ name: "PDF_URL_Tool_2", aliases: ["PDF&URL Tool~2"] });
    expect(parsed.notes[0]).toMatch(/t.jsonl:1: name "PDF&URL Tool~2" rewritten to "PDF_URL_Tool_2"/);
    const { catalog } = openCatalog();
    await catalog.registry.register("s", parsed.tools);
    expect(names(catalog.index.search({ query: "PDF&URL Tool~2", type: "exact" }))).toEqual([
      "PDF_URL_Tool_2",
    ]);
  });
});

describe("catalog file errors", () => {
  it("reports a bad JSONL line with file and line number", () => {
    const file = write("bad.jsonl", `${JSON.stringify({ name: "ok" })}\n{not json\n`);
    const err = failure(() => parseCatalogFile(file));
    expect(err.code).toBe("invalid_argument");
    expect(err.details[0]).toMatch(/bad\.jsonl:2: invalid JSON/);
  });

  it("lists every problem and loads nothing", () => {
    const lines = [
      { name: "ok" },
      { description: "no name" },
      { name: "ok" },
      { name: "x", side_effects: "maybe" },
    ];
    const file = write("many.jsonl", lines.map((l) => JSON.stringify(l)).join("\n"));
    const err = failure(() => parseCatalogFile(file));
    expect(err.message).toMatch(/3 problem\(s\), nothing loaded/);
    expect(err.details).toEqual([
      expect.stringMatching(/many\.jsonl:2: "name" is missing/),
      expect.stringMatching(/many\.jsonl:3: duplicate tool name "ok" \(first at .*many\.jsonl:1\)/),
      expect.stringMatching(/many\.jsonl:4: side_effects "maybe" must be one of/),
    ]);
  });

  it("reports the line of a YAML syntax error", () => {
    const err = failure(() => parseCatalogFile(write("bad.yaml", "tools:\n  - name: a\n   bad: [\n")));
    expect(err.message).toMatch(/bad\.yaml:\d+: invalid YAML/);
  });

  it("rejects a JSON document that is not a tool list", () => {
    expect(() => parseCatalogFile(write("x.json", '{"foo": 1}'))).toThrowError(/expected an array of tools/);
  });

  it("reports a missing file", () => {
    expect(() => parseCatalogFile(join(tempDir(), "missing.jsonl"))).toThrowError(/cannot read catalog/);
  });

  it("refuses a tool whose args schema is not a JSON Schema, naming file, line, tool and JSON path", () => {
    const lines = [
      { name: "ok", parameters: schema },
      { name: "pay", parameters: { type: "object", properties: { amount: { type: "integr" } } } },
      { name: "typo", parameters: { type: "objekt" } },
      { name: "req", parameters: { type: "object", required: "amount" } },
    ];
    const err = failure(() =>
      parseCatalogFile(write("schemas.jsonl", lines.map((l) => JSON.stringify(l)).join("\n"))),
    );
    expect(err.message).toMatch(/3 problem\(s\), nothing loaded/);
    expect(err.message).toContain("set invalid_schemas: warn on this catalog");
    expect(err.details).toEqual([
      expect.stringMatching(
        /schemas\.jsonl:2: tool "pay": args schema is not a valid JSON Schema at \/properties\/amount\/type: "integr" is not one of array, boolean, integer, null, number, object, string$/,
      ),
      expect.stringMatching(/schemas\.jsonl:3: tool "typo": .* at \/type: "objekt" is not one of/),
      expect.stringMatching(/schemas\.jsonl:4: tool "req": .* at \/required: must be array$/),
    ]);
    expect(err.message).toContain("set invalid_schemas: warn on this catalog");
  });

  it("reports every mistake of one tool's schema, each at its place", () => {
    const pay = {
      name: "pay",
      parameters: {
        type: "object",
        properties: { amount: { type: "integr" }, currency: { enum: "EUR" } },
        required: "amount",
      },
    };
    const err = failure(() => parseCatalogFile(write("two.jsonl", JSON.stringify(pay))));
    expect(err.details).toHaveLength(1);
    expect(err.details?.[0]).toContain('/properties/amount/type: "integr" is not one of');
    expect(err.details?.[0]).toContain("/properties/currency/enum: must be array");
    expect(err.details?.[0]).toContain("/required: must be array");
  });

  it("loads such a tool with a note when the file is marked as a copy of a server's list (invalid_schemas: warn)", () => {
    const file = write("copied.jsonl", JSON.stringify({ name: "typo", parameters: { type: "objekt" } }));
    const parsed = parseCatalogFile(file, { invalidSchemas: "warn" });
    expect(parsed.tools.map((t) => t.name)).toEqual(["typo"]);
    expect(parsed.notes).toEqual([
      expect.stringMatching(/copied\.jsonl:1: tool "typo": .*; loaded as written, its calls unchecked$/),
    ]);
  });
});

describe("the vendored evaluation catalogs", () => {
  const dir = new URL("../../data/eval", import.meta.url).pathname;
  const files = readdirSync(dir).filter((f) => f.endsWith("_catalog.jsonl"));
  it("are all there", () => expect(files.length).toBe(4));
  it.each(files)(
    "%s loads and registers as it is (a copy of servers' lists: invalid schemas noted)",
    async (f) => {
      const parsed = parseCatalogFile(join(dir, f), { invalidSchemas: "warn" });
      const { catalog } = openCatalog();
      const result = await catalog.registry.register(f, parsed.tools);
      expect(result.added).toBe(parsed.tools.length);
      expect(parsed.tools.length).toBeGreaterThan(100);
    },
  );

  it("load whole, the one MCP server's draft-04 schema (boolean exclusiveMinimum) read as draft-04", () => {
    // pdf-reader-mcp writes draft-04's boolean `exclusiveMinimum` without naming its draft.
    for (const f of files)
      expect(parseCatalogFile(join(dir, f)).notes.filter((note) => note.includes("JSON Schema"))).toEqual([]);
  });
});
