import { isJsonObject, type JsonObject, type JsonValue } from "./json.ts";

/**
 * Converts a JSON Schema to the OpenAPI 3.0 subset Gemini accepts in `functionDeclarations[].parameters`
 * (the `Schema` object of the Gemini API). What changes, and why:
 *
 * - `$ref` to `#/$defs/...` or `#/definitions/...` is inlined (Gemini has no references); a recursive
 *   reference is cut to `{type: "object"}` at its second visit.
 * - `type: [T, "null"]` → `type: T, nullable: true`; several non-null types → `anyOf` of each type.
 * - `oneOf` → `anyOf` (the closest keyword Gemini has); an `anyOf` branch that is only `null` becomes
 *   `nullable: true`, and a single remaining branch is merged into its parent.
 * - `const` (string) → `enum: [const]`; `enum` is kept only when every value is a string (Gemini's enum is
 *   for strings), otherwise dropped.
 * - `format` is kept only where Gemini supports it (string: `enum`, `date-time`; integer: `int32`, `int64`;
 *   number: `float`, `double`) because other formats are rejected.
 * - `required` is filtered to names present in `properties`.
 * - Everything else is stripped: `$schema`, `$id`, `$defs`, `definitions`, `additionalProperties`,
 *   `propertyNames`, `patternProperties`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`,
 *   `uniqueItems`, `allOf`, `not`, `if`/`then`/`else`, `examples`, `$comment`, `readOnly`, `writeOnly`,
 *   non-string `const`, and tuple-form `items`.
 */
export function toGeminiSchema(schema: JsonObject): JsonObject {
  return convert(schema, schema, new Set());
}

const KEEP_AS_IS = new Set([
  "title",
  "description",
  "default",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "minProperties",
  "maxProperties",
  "nullable",
]);

const FORMATS: Readonly<Record<string, readonly string[]>> = {
  string: ["enum", "date-time"],
  integer: ["int32", "int64"],
  number: ["float", "double"],
};

type Mutable = Record<string, JsonValue>;

function resolveRef(root: JsonObject, ref: string): JsonObject | undefined {
  const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  if (!match) return undefined;
  const defs = root[match[1] as string];
  if (!isJsonObject(defs)) return undefined;
  const target = defs[decodeURIComponent((match[2] as string).replace(/~1/g, "/").replace(/~0/g, "~"))];
  return isJsonObject(target) ? target : undefined;
}

function convert(node: JsonObject, root: JsonObject, visiting: Set<string>): JsonObject {
  const ref = node.$ref;
  if (typeof ref === "string") {
    const target = resolveRef(root, ref);
    if (!target || visiting.has(ref)) return withDescription({ type: "object" }, node);
    const inner = convert(target, root, new Set([...visiting, ref]));
    return withDescription({ ...inner }, node);
  }

  const out: Mutable = {};
  for (const [key, value] of Object.entries(node)) {
    if (KEEP_AS_IS.has(key)) out[key] = value;
  }

  const type = node.type;
  if (typeof type === "string") {
    if (type === "null") out.nullable = true;
    else out.type = type;
  } else if (Array.isArray(type)) {
    const types = type.filter((t): t is string => typeof t === "string");
    const nonNull = types.filter((t) => t !== "null");
    if (nonNull.length !== types.length) out.nullable = true;
    if (nonNull.length === 1) out.type = nonNull[0] as string;
    else if (nonNull.length > 1) out.anyOf = nonNull.map((t) => ({ type: t }));
  }

  if (typeof node.const === "string") out.enum = [node.const];
  if (Array.isArray(node.enum) && node.enum.length > 0 && node.enum.every((v) => typeof v === "string")) {
    out.enum = node.enum;
  }
  if (typeof node.format === "string" && typeof out.type === "string") {
    if (FORMATS[out.type]?.includes(node.format)) out.format = node.format;
  }

  if (isJsonObject(node.properties)) {
    const props: Mutable = {};
    for (const [name, sub] of Object.entries(node.properties)) {
      if (isJsonObject(sub)) props[name] = convert(sub, root, visiting);
    }
    out.properties = props;
    if (Array.isArray(node.required)) {
      const required = node.required.filter((r): r is string => typeof r === "string" && r in props);
      if (required.length > 0) out.required = required;
    }
  }
  if (isJsonObject(node.items)) out.items = convert(node.items, root, visiting);

  const branches = [
    ...(Array.isArray(node.anyOf) ? node.anyOf : []),
    ...(Array.isArray(node.oneOf) ? node.oneOf : []),
  ].filter(isJsonObject);
  if (branches.length > 0) mergeBranches(out, branches, root, visiting);
  return out;
}

function isOnlyNull(schema: JsonObject): boolean {
  return Object.keys(schema).length === 1 && schema.nullable === true;
}

function mergeBranches(out: Mutable, branches: JsonObject[], root: JsonObject, visiting: Set<string>): void {
  const converted = branches.map((b) => convert(b, root, visiting));
  const kept = converted.filter((b) => !isOnlyNull(b));
  if (kept.length !== converted.length) out.nullable = true;
  if (kept.length === 1) {
    const [only] = kept as [JsonObject];
    // The parent's own keywords (its description, say) win over the branch's.
    for (const [key, value] of Object.entries(only)) if (!(key in out)) out[key] = value;
  } else if (kept.length > 1) {
    out.anyOf = kept;
  }
}

function withDescription(schema: Mutable, from: JsonObject): JsonObject {
  if (typeof from.description === "string") schema.description = from.description;
  return schema;
}
