import { describe, expect, it } from "vitest";
import { renderToolPayload, toGeminiSchema } from "../../src/payload/index.ts";
import { tool } from "./catalog.ts";

describe("Gemini schema conversion", () => {
  it("strips $schema and additionalProperties, which Gemini rejects", () => {
    expect(
      toGeminiSchema({
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        additionalProperties: false,
        properties: { q: { type: "string", propertyNames: { pattern: "x" } } },
      }),
    ).toEqual({ type: "object", properties: { q: { type: "string" } } });
  });

  it("inlines local $ref definitions and cuts recursion", () => {
    const out = toGeminiSchema({
      type: "object",
      $defs: { node: { type: "object", properties: { child: { $ref: "#/$defs/node" } } } },
      properties: { root: { $ref: "#/$defs/node", description: "the root" } },
    });
    expect(out).toEqual({
      type: "object",
      properties: {
        root: { type: "object", description: "the root", properties: { child: { type: "object" } } },
      },
    });
  });

  it("turns nullable type unions and null anyOf branches into nullable", () => {
    expect(toGeminiSchema({ type: ["object", "null"], properties: {} })).toEqual({
      type: "object",
      nullable: true,
      properties: {},
    });
    expect(toGeminiSchema({ anyOf: [{ type: "string" }, { type: "null" }], description: "d" })).toEqual({
      description: "d",
      nullable: true,
      type: "string",
    });
  });

  it("turns string const into enum and drops non-string enums and unsupported formats", () => {
    expect(toGeminiSchema({ type: "string", const: "a", format: "uri" })).toEqual({
      type: "string",
      enum: ["a"],
    });
    expect(toGeminiSchema({ type: "integer", enum: [1, 2], format: "int32" })).toEqual({
      type: "integer",
      format: "int32",
    });
  });

  it("maps oneOf to anyOf and filters required to declared properties", () => {
    expect(
      toGeminiSchema({
        type: "object",
        properties: { a: { oneOf: [{ type: "string" }, { type: "number" }] } },
        required: ["a", "ghost"],
      }),
    ).toEqual({
      type: "object",
      properties: { a: { anyOf: [{ type: "string" }, { type: "number" }] } },
      required: ["a"],
    });
  });

  it("omits parameters for a tool without arguments", () => {
    const { payloadJson } = renderToolPayload({ provider: "gemini", tools: [tool("ping")] });
    expect(JSON.parse(payloadJson)).toEqual({
      functionDeclarations: [{ name: "ping", description: "Does ping" }],
    });
  });
});
