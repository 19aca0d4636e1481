import { createRequire } from "node:module";
import { Ajv, type CodeOptions, type SchemaValidateFunction, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import type AjvCoreModule from "ajv/dist/core.js";
import AjvDraft04 from "ajv-draft-04";
import { RE2JS } from "re2js";
import { quoteInput } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import { canonicalJson } from "../json.ts";

/**
 * The JSON Schema drafts a tool's args schema may be written in, read from its `$schema`: MCP servers
 * and OpenAPI-derived catalogs still ship draft-04 (`exclusiveMinimum: true`), MCP 2026 allows
 * 2020-12. A schema without `$schema`, or naming one of none of these, is read as draft-07, the rules
 * MCP, OpenAI and Anthropic tool schemas share, unless it uses draft-04's boolean exclusive bounds,
 * which no later draft allows (servers rarely declare their draft).
 */
type Dialect = "draft-04" | "draft-06" | "draft-07" | "2019-09" | "2020-12";

function dialectOf(schema: JsonObject): Dialect {
  const declared = typeof schema.$schema === "string" ? schema.$schema : "";
  if (declared.includes("draft-04")) return "draft-04";
  if (declared.includes("draft-06")) return "draft-06";
  if (declared.includes("2019-09")) return "2019-09";
  if (declared.includes("2020-12")) return "2020-12";
  if (declared === "" && hasBooleanExclusiveBound(schema)) return "draft-04";
  return "draft-07";
}

/** Whether `exclusiveMinimum` or `exclusiveMaximum` is a boolean anywhere in the schema (one pass). */
function hasBooleanExclusiveBound(schema: JsonObject): boolean {
  const pending: unknown[] = [schema];
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    if (typeof value !== "object" || value === null) continue;
    if (Array.isArray(value)) {
      pending.push(...value);
      continue;
    }
    const object = value as Record<string, unknown>;
    if (typeof object.exclusiveMinimum === "boolean" || typeof object.exclusiveMaximum === "boolean")
      return true;
    for (const inner of Object.values(object)) pending.push(inner);
  }
  return false;
}

const require = createRequire(import.meta.url);

/** What every draft's Ajv class shares (CommonJS default exports, read through `.default`). */
type AjvCore = AjvCoreModule.default;

/** A schema pattern RE2 cannot compile (a lookaround or a backreference, say). */
export class UnsupportedPattern extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(reason);
  }
}

/**
 * Ajv's regex engine for `pattern` and `patternProperties`: RE2 semantics, so a caller's pattern runs
 * in time linear in the example it checks. With JavaScript's backtracking RegExp, `^(a+)+$` against
 * "aaaaaaaaaaaaaaaaaaaaaaaaaaa!" froze the server for seconds in one RegisterTools call.
 */
const re2Engine: NonNullable<CodeOptions["regExp"]> = Object.assign(
  (pattern: string) => {
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(pattern);
    } catch (err) {
      throw new UnsupportedPattern(pattern, (err as Error).message);
    }
    // Ajv keys the compiled patterns of one schema by toString: it must differ per pattern.
    return { test: (text: string) => compiled.test(text), toString: () => `/${pattern}/` };
  },
  // Used only by Ajv's standalone code generation, which wayfind does not use.
  { code: 'require("re2js").RE2JS.compile' },
);

/**
 * `uniqueItems` by each item's canonical JSON, in one pass. Ajv's own compares every pair of items,
 * quadratic in an example array's length: seconds for one RegisterTools call within the size limits.
 */
const uniqueItems: SchemaValidateFunction = (unique: boolean, items: unknown[]) => {
  if (!unique) return true;
  const seen = new Map<string, number>();
  for (let i = 0; i < items.length; i++) {
    const key = canonicalJson(items[i]);
    const first = seen.get(key);
    if (first !== undefined) {
      uniqueItems.errors = [
        {
          keyword: "uniqueItems",
          message: `must NOT have duplicate items (items ## ${first} and ${i} are identical)`,
          params: { i: first, j: i },
        },
      ];
      return false;
    }
    seen.set(key, i);
  }
  return true;
};

type AjvOptions = ConstructorParameters<typeof Ajv>[0];

function ajvOf(dialect: Dialect, options: AjvOptions): AjvCore {
  switch (dialect) {
    case "draft-04":
      return new AjvDraft04.default(options);
    case "2019-09":
      return new Ajv2019(options);
    case "2020-12":
      return new Ajv2020(options);
    case "draft-06": {
      const instance = new Ajv({ ...options, defaultMeta: "http://json-schema.org/draft-06/schema#" });
      instance.addMetaSchema(require("ajv/dist/refs/json-schema-draft-06.json"));
      return instance;
    }
    case "draft-07":
      return new Ajv(options);
  }
}

/** One instance per dialect and purpose, made on first use. */
const instances = new Map<string, AjvCore>();

function instance(dialect: Dialect, purpose: "meta" | "check" | "report"): AjvCore {
  const key = `${dialect}:${purpose}`;
  let found = instances.get(key);
  if (found === undefined) {
    found =
      purpose === "meta"
        ? ajvOf(dialect, { strict: false, validateFormats: false, allErrors: true })
        : compilerOf(dialect, purpose === "report");
    instances.set(key, found);
  }
  return found;
}

function compilerOf(dialect: Dialect, allErrors: boolean): AjvCore {
  const compiler = ajvOf(dialect, {
    strict: false,
    allErrors,
    validateFormats: false,
    validateSchema: false,
    // Ajv's optimizing passes over the generated code cost more than the compile itself, and the
    // validators run once per example: they would not pay back.
    code: { regExp: re2Engine, optimize: false },
  });
  compiler.removeKeyword("uniqueItems");
  compiler.addKeyword({
    keyword: "uniqueItems",
    type: "array",
    schemaType: "boolean",
    validate: uniqueItems,
  });
  return compiler;
}

/**
 * The schema compiled by its own draft's rules (RE2 patterns, linear uniqueItems): `report` keeps
 * every problem (a call's check), otherwise the first (examples). Throws when it does not compile,
 * UnsupportedPattern for a pattern RE2 cannot run. Nothing of the schema stays cached in Ajv.
 */
export function compileArgsSchema(schema: JsonObject, report: boolean): ValidateFunction {
  const compiler = instance(dialectOf(schema), report ? "report" : "check");
  // $schema chose the compiler; $id would make Ajv keep the schema under its name.
  const { $schema: _s, $id: _i, ...rest } = schema;
  try {
    return compiler.compile(rest);
  } finally {
    compiler.removeSchema(rest);
  }
}

/** Where an args schema breaks the rules of JSON Schema (a JSON pointer into it) and how. */
export interface SchemaProblem {
  readonly path: string;
  readonly message: string;
}

/** The most problems reported for one schema: enough to fix it, bounded for a schema full of them. */
const MAX_SCHEMA_PROBLEMS = 10;
/** The meta-schema's errors read to find them (each is compared with the others). */
const MAX_META_ERRORS = 200;

/**
 * Every place (up to a bound) where an args schema breaks its draft's rules (dialectOf): `type` names
 * a JSON type, `properties` maps names to schemas, `required` lists names, …: `{type: "objekt"}` is
 * not a schema, and would let every call through unchecked. One problem per place in the schema.
 * Linear in the schema, which its size bound keeps small; the caller checks that bound first.
 */
export function jsonSchemaProblems(schema: JsonObject): SchemaProblem[] {
  const dialect = dialectOf(schema);
  const checker = instance(dialect, "meta");
  // Checked by the draft chosen: a $schema of no known draft would name a meta-schema Ajv lacks.
  const { $schema: _s, ...rest } = schema;
  if (checker.validateSchema(rest) === true) return [];
  // anyOf/oneOf restate their branches' errors at the same place, and a place holding a deeper
  // problem fails its other branches too (`items` is a schema or an array): the deepest one is told.
  const errors = (checker.errors ?? [])
    .slice(0, MAX_META_ERRORS)
    .filter((error) => error.keyword !== "anyOf" && error.keyword !== "oneOf");
  const deeper = (path: string) => errors.some((other) => other.instancePath.startsWith(`${path}/`));
  const problems: SchemaProblem[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    if (seen.has(error.instancePath) || deeper(error.instancePath)) continue;
    seen.add(error.instancePath);
    const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues;
    const value = valueAt(rest, error.instancePath);
    problems.push({
      path: error.instancePath || "/",
      message: allowed
        ? `${typeof value === "string" ? quoteInput(value) : String(JSON.stringify(value)).slice(0, 100)} is not one of ${allowed.join(", ")}`
        : (error.message ?? "is not valid JSON Schema"),
    });
    if (problems.length === MAX_SCHEMA_PROBLEMS) break;
  }
  return problems.length > 0 ? problems : [{ path: "/", message: "is not a JSON Schema" }];
}

function valueAt(schema: JsonObject, pointer: string): unknown {
  return pointer
    .split("/")
    .slice(1)
    .reduce<unknown>(
      (at, key) => (at as Record<string, unknown> | undefined)?.[key.replace(/~1/g, "/").replace(/~0/g, "~")],
      schema,
    );
}
