import type { JsonObject, JsonValue } from "../json.ts";

/**
 * Compact TypeScript-like signature of a JSON Schema, e.g.
 * `{owner: string, state?: "open"|"closed", labels?: string[], page?: number}`.
 * Optional properties get `?`; enum/const become literal unions; anyOf/oneOf become unions, allOf an
 * intersection; `$ref` and untyped schemas are `unknown`; nesting deeper than MAX_DEPTH is `object`.
 * Descriptions are left out (tool_get returns the full schema). Property order is the schema's own.
 */
const MAX_SIGNATURE_DEPTH = 4;

const isObject = (v: JsonValue | undefined): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function schemaSignature(schema: JsonValue | undefined, depth = 0): string {
  if (schema === true || schema === undefined) return "unknown";
  if (!isObject(schema)) return "never";
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join("|") || "never";
  if ("const" in schema) return JSON.stringify(schema.const ?? null);
  for (const key of ["anyOf", "oneOf"] as const) {
    const options = schema[key];
    if (Array.isArray(options)) return union(options.map((o) => schemaSignature(o, depth)));
  }
  if (Array.isArray(schema.allOf)) return schema.allOf.map((o) => schemaSignature(o, depth)).join("&");
  const type = schema.type;
  if (Array.isArray(type))
    return union(type.map((t) => (typeof t === "string" ? single(schema, t, depth) : "unknown")));
  if (typeof type === "string") return single(schema, type, depth);
  if (isObject(schema.properties)) return single(schema, "object", depth);
  return "unknown";
}

function single(schema: JsonObject, type: string, depth: number): string {
  switch (type) {
    case "string":
    case "number":
    case "boolean":
    case "null":
      return type;
    case "integer":
      return "number";
    case "array": {
      const items = schemaSignature(schema.items, depth + 1);
      return items.includes("|") || items.includes("&") ? `(${items})[]` : `${items}[]`;
    }
    case "object": {
      const properties = schema.properties;
      if (!isObject(properties)) return "object";
      if (depth >= MAX_SIGNATURE_DEPTH) return "object";
      const required = new Set(
        Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : [],
      );
      const fields = Object.keys(properties).map((key) => {
        const name = PLAIN_KEY.test(key) ? key : JSON.stringify(key);
        return `${name}${required.has(key) ? "" : "?"}: ${schemaSignature(properties[key], depth + 1)}`;
      });
      return `{${fields.join(", ")}}`;
    }
    default:
      return "unknown";
  }
}

const union = (parts: string[]): string => [...new Set(parts)].join("|") || "never";
