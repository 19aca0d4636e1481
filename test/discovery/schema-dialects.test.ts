import { describe, expect, it } from "vitest";
import { jsonSchemaProblems } from "../../src/discovery/schema-dialects.ts";
import { argumentChecker } from "../../src/discovery/validate.ts";
import type { JsonObject } from "../../src/json.ts";

// A tool's args schema is read by the draft it is written in: its `$schema`, or draft-04 when it uses
// draft-04's boolean exclusive bounds, else draft-07.

const draft04Page = {
  type: "object",
  properties: { page: { type: "integer", minimum: 0, exclusiveMinimum: true } },
};

describe("JSON Schema drafts", () => {
  it("reads a schema declaring draft-04 by draft-04's rules, its boolean exclusive bound included", () => {
    const schema = { $schema: "http://json-schema.org/draft-04/schema#", ...draft04Page };
    expect(jsonSchemaProblems(schema)).toEqual([]);
    const check = argumentChecker(schema);
    expect(check({ page: 1 })).toEqual([]);
    expect(check({ page: 0 })).toEqual([{ path: "/page", message: "must be > 0" }]);
  });

  it("reads a schema naming no draft as draft-04 when it uses a boolean exclusive bound", () => {
    expect(jsonSchemaProblems(draft04Page)).toEqual([]);
    expect(argumentChecker(draft04Page)({ page: 0 })).toEqual([{ path: "/page", message: "must be > 0" }]);
  });

  it("reads 2020-12 by its own rules ($defs, prefixItems)", () => {
    const schema: JsonObject = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: { id: { type: "string", minLength: 3 } },
      properties: { pair: { type: "array", prefixItems: [{ $ref: "#/$defs/id" }, { type: "integer" }] } },
    };
    expect(jsonSchemaProblems(schema)).toEqual([]);
    const check = argumentChecker(schema);
    expect(check({ pair: ["abc", 2] })).toEqual([]);
    expect(check({ pair: ["ab", 2] })).toEqual([
      { path: "/pair/0", message: "must NOT have fewer than 3 characters" },
    ]);
  });

  it("reads 2019-09 and draft-06 schemas that declare them", () => {
    expect(
      jsonSchemaProblems({ $schema: "https://json-schema.org/draft/2019-09/schema", type: "object" }),
    ).toEqual([]);
    expect(
      jsonSchemaProblems({ $schema: "http://json-schema.org/draft-06/schema#", type: "object" }),
    ).toEqual([]);
  });

  it("refuses a boolean exclusive bound where the schema declares a later draft", () => {
    const schema = { $schema: "http://json-schema.org/draft-07/schema#", ...draft04Page };
    expect(jsonSchemaProblems(schema)).toEqual([
      { path: "/properties/page/exclusiveMinimum", message: "must be number" },
    ]);
  });

  it("tells each mistake once, at its deepest place", () => {
    const schema = {
      type: "object",
      properties: { tags: { type: "array", items: { type: "strng" } }, n: { type: "integer", minimum: "1" } },
    };
    expect(jsonSchemaProblems(schema).map((problem) => problem.path)).toEqual([
      "/properties/tags/items/type",
      "/properties/n/minimum",
    ]);
  });
});
