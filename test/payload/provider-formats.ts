import { Ajv2020 } from "ajv/dist/2020.js";

/**
 * Structural JSON Schemas of each provider's documented `tools` format (Anthropic Messages API tools,
 * OpenAI Chat Completions function tools, Gemini functionDeclarations with its OpenAPI-subset Schema).
 * additionalProperties: false everywhere we control, so an unexpected key fails the test.
 */
const NAME = "^[a-zA-Z0-9_-]{1,64}$";

const anthropic = {
  type: "array",
  items: {
    oneOf: [
      {
        type: "object",
        required: ["name", "description", "input_schema"],
        additionalProperties: false,
        properties: {
          name: { type: "string", pattern: NAME },
          description: { type: "string" },
          input_schema: { type: "object", required: ["type"], properties: { type: { const: "object" } } },
          cache_control: {
            type: "object",
            required: ["type"],
            additionalProperties: false,
            properties: { type: { const: "ephemeral" } },
          },
          defer_loading: { type: "boolean" },
        },
      },
      {
        type: "object",
        required: ["type", "name"],
        additionalProperties: false,
        properties: {
          type: { enum: ["tool_search_tool_bm25_20251119", "tool_search_tool_regex_20251119"] },
          name: { enum: ["tool_search_tool_bm25", "tool_search_tool_regex"] },
          cache_control: { type: "object" },
        },
      },
    ],
  },
};

const openai = {
  type: "array",
  items: {
    type: "object",
    required: ["type", "function"],
    additionalProperties: false,
    properties: {
      type: { const: "function" },
      function: {
        type: "object",
        required: ["name", "parameters"],
        additionalProperties: false,
        properties: {
          name: { type: "string", pattern: NAME },
          description: { type: "string" },
          parameters: { type: "object", required: ["type"], properties: { type: { const: "object" } } },
          strict: { type: "boolean" },
        },
      },
    },
  },
};

const gemini = {
  type: "object",
  required: ["functionDeclarations"],
  additionalProperties: false,
  properties: {
    functionDeclarations: {
      type: "array",
      items: {
        type: "object",
        required: ["name", "description"],
        additionalProperties: false,
        properties: {
          name: { type: "string", pattern: "^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$" },
          description: { type: "string" },
          parameters: {
            allOf: [
              { $ref: "#/$defs/schema" },
              { required: ["type", "properties"], properties: { type: { const: "object" } } },
            ],
          },
        },
      },
    },
  },
  $defs: {
    schema: {
      type: "object",
      additionalProperties: false,
      properties: {
        type: { enum: ["string", "number", "integer", "boolean", "array", "object"] },
        format: { enum: ["enum", "date-time", "int32", "int64", "float", "double"] },
        title: { type: "string" },
        description: { type: "string" },
        nullable: { type: "boolean" },
        enum: { type: "array", items: { type: "string" } },
        default: true,
        properties: { type: "object", additionalProperties: { $ref: "#/$defs/schema" } },
        required: { type: "array", items: { type: "string" } },
        items: { $ref: "#/$defs/schema" },
        anyOf: { type: "array", items: { $ref: "#/$defs/schema" } },
        minItems: { type: "integer" },
        maxItems: { type: "integer" },
        minLength: { type: "integer" },
        maxLength: { type: "integer" },
        minProperties: { type: "integer" },
        maxProperties: { type: "integer" },
        pattern: { type: "string" },
        minimum: { type: "number" },
        maximum: { type: "number" },
      },
    },
  },
};

const ajv = new Ajv2020({ allErrors: true, strict: false });
export const validators = {
  anthropic: ajv.compile(anthropic),
  openai: ajv.compile(openai),
  gemini: ajv.compile(gemini),
};

export function formatErrors(provider: keyof typeof validators): string {
  return JSON.stringify(validators[provider].errors?.slice(0, 5) ?? []);
}
