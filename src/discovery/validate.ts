import { createHash } from "node:crypto";
import type { ValidateFunction } from "ajv";
import { invalidArgument, quoteInput, WayfindError } from "../errors.ts";
import type { JsonObject, JsonValue } from "../json.ts";
import { canonicalJson, jsonShape } from "../json.ts";
import { LIMITS as API, type Limit, sizeProblem } from "../limits.ts";
import { runToEnd } from "../slices.ts";
import { compileArgsSchema, UnsupportedPattern } from "./schema-dialects.ts";
import {
  LOADING_MODES,
  type LoadingMode,
  SIDE_EFFECTS,
  type SideEffects,
  type Tool,
  type ToolExample,
  type ToolInput,
} from "./types.ts";

export const LIMITS = {
  /** Tools one source (a catalog file, an MCP server) may hold; RegisterTools takes fewer per call. */
  toolsPerSource: 50_000,
} as const;

/** Provider-safe names plus `.` for namespaces; `_` may lead (RapidAPI-style names do). */
export const NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const NAMESPACE_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_-]*$/;

export type ToolRecord = Omit<Tool, "source" | "owner">;

/** Checks one name; returns the problem or undefined. */
function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "name is empty";
  const tooLong = sizeProblem(API.toolName, name.length);
  if (tooLong) return tooLong;
  if (!NAME_PATTERN.test(name))
    return `name "${name}" has characters outside [A-Za-z0-9_.-] (or starts with "." or "-")`;
  return undefined;
}

/** `ns.name` unless the name already carries the namespace. */
export function fullName(input: ToolInput): string {
  const ns = input.namespace ?? "";
  return ns && !input.name.startsWith(`${ns}.`) ? `${ns}.${input.name}` : input.name;
}

/** How errors name a tool: by its name when it has one, else by its index in the request. */
export function toolLabel(input: ToolInput, index: number): string {
  return typeof input.name === "string" && input.name ? `tool ${quoteInput(input.name)}` : `tool #${index}`;
}

/**
 * Validates and normalises one input into the stored record (with hash); throws invalid_argument.
 * In steps, so many tools are checked between other calls (src/text/slices.ts runInSlices): it
 * yields before each part that can take milliseconds on its own (compiling the args schema, checking
 * each example, hashing), so a slice of the event loop ends close to its budget.
 */
export function* recordSteps(
  input: ToolInput,
  index: number,
  /** The examples' check, when it already ran off the event loop (schema-checks.ts). */
  examplesChecked?: ExamplesCheck,
): Generator<void, ToolRecord> {
  const fail = (msg: string) => invalidArgument(`${toolLabel(input, index)}: ${msg}`);
  if (typeof input.name !== "string") throw fail("name must be a string");
  const namespace = input.namespace ?? "";
  if (namespace && !NAMESPACE_PATTERN.test(namespace))
    throw fail(`namespace ${quoteInput(namespace)} must match [A-Za-z0-9_-]+`);
  const name = fullName(input);
  const bad = nameProblem(name);
  if (bad) throw fail(bad);
  const description = input.description ?? "";
  if (typeof description !== "string") throw fail("description must be a string");
  const descriptionProblem = sizeProblem(API.toolDescription, description.length);
  if (descriptionProblem) throw fail(descriptionProblem);
  const title = input.title ?? "";
  const titleProblem = sizeProblem(API.toolTitle, title.length);
  if (titleProblem) throw fail(titleProblem);
  const tags = [...new Set(input.tags ?? [])];
  const tagsProblem = listProblem(tags, API.toolTags, API.toolTag);
  if (tagsProblem) throw fail(tagsProblem);
  const sideEffects: SideEffects = input.sideEffects ?? "external";
  if (!SIDE_EFFECTS.includes(sideEffects))
    throw fail(`side_effects must be one of ${SIDE_EFFECTS.join(", ")}`);
  const loadingMode: LoadingMode = input.loadingMode ?? "deferred";
  if (!LOADING_MODES.includes(loadingMode))
    throw fail(`loading_mode must be one of ${LOADING_MODES.join(", ")}`);
  const argsSchema = input.argsSchema ?? { type: "object", properties: {} };
  if (!isObject(argsSchema)) throw fail("args schema must be a JSON object");
  const schemaProblem = argsSchemaProblem(argsSchema);
  if (schemaProblem) throw fail(schemaProblem);
  const outputSchema = input.outputSchema ?? null;
  if (outputSchema !== null && !isObject(outputSchema)) throw fail("output schema must be a JSON object");
  const aliases = [...new Set(input.aliases ?? [])].filter((a) => a !== name);
  const aliasesProblem = listProblem(aliases, API.toolAliases, API.toolAlias);
  if (aliasesProblem) throw fail(aliasesProblem);
  const examples = (input.examples ?? []).map((ex, i) => toExample(ex, i, fail));
  const examplesProblem = sizeProblem(API.toolExamples, examples.length);
  if (examplesProblem) throw fail(examplesProblem);
  if (examplesChecked?.problem !== undefined) throw invalidArgument(examplesChecked.problem);
  if (examples.length > 0 && examplesChecked === undefined)
    yield* validateExamples(name, argsSchema, examples);
  const body = {
    name,
    namespace,
    title,
    description,
    tags,
    sideEffects,
    loadingMode,
    argsSchema,
    outputSchema,
    examples,
    aliases,
  };
  // Canonical JSON of up to 16 examples of 16 KB each and a 64 KB schema: milliseconds too.
  yield;
  return { ...body, hash: sha256(canonicalJson(body)) };
}

function toExample(ex: ToolExample, i: number, fail: (m: string) => Error): ToolExample {
  if (!isObject(ex) || !isObject(ex.args)) throw fail(`example ${i}: "args" must be a JSON object`);
  // Depth first: serialising (for the size, later the hash) recurses.
  const { depth } = jsonShape(ex.args, API.toolExampleArgsDepth.max, API.toolExampleArgsBytes.max);
  const problem =
    sizeProblem(API.toolExampleArgsDepth, depth) ?? sizeProblem(API.toolExampleArgsBytes, jsonBytes(ex.args));
  if (problem) throw fail(`example ${i}: ${problem}`);
  return { args: ex.args, description: ex.description ?? "", tags: [...(ex.tags ?? [])] };
}

/**
 * Bounds on the args schema, checked before Ajv compiles it: compiling takes time quadratic in the
 * schema's size (2,000 properties: seconds, then a RangeError from the stack) and depth recurses.
 */
export function argsSchemaProblem(schema: JsonObject): string | undefined {
  const shape = jsonShape(schema, API.toolArgsSchemaDepth.max, API.toolArgsSchemaNodes.max);
  return (
    sizeProblem(API.toolArgsSchemaDepth, shape.depth) ??
    sizeProblem(API.toolArgsSchemaNodes, shape.values) ??
    sizeProblem(API.toolArgsSchemaBytes, jsonBytes(schema))
  );
}

/** What checking a tool's examples against its args schema found: `problem` is what to fix. */
export interface ExamplesCheck {
  readonly problem?: string;
}

/** Checks examples against their tool's args schema to the end at once (in the schema worker). */
export function checkExamples(
  name: string,
  schema: JsonObject,
  examples: readonly ToolExample[],
): ExamplesCheck {
  try {
    runToEnd(validateExamples(name, schema, examples));
    return {};
  } catch (error) {
    if (error instanceof WayfindError) return { problem: error.message };
    throw error;
  }
}

/** JSON values in an args schema, counted up to just past the per-tool bound. */
export function schemaValues(schema: JsonObject): number {
  return jsonShape(schema, API.toolArgsSchemaDepth.max, API.toolArgsSchemaNodes.max).values;
}

/**
 * JSON values in the args schemas that registering compiles (those of tools with examples), each
 * counted up to just past the per-tool bound, which rejects it on its own.
 */
export function compiledSchemaValues(inputs: readonly ToolInput[]): number {
  let total = 0;
  for (const input of inputs)
    if ((input.examples?.length ?? 0) > 0 && isObject(input.argsSchema))
      total += jsonShape(input.argsSchema, API.toolArgsSchemaDepth.max, API.toolArgsSchemaNodes.max).values;
  return total;
}

/** UTF-8 bytes of the value as JSON. */
function jsonBytes(value: JsonValue): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** One problem of a tool call's arguments: where (a JSON pointer; "" = the whole object) and what. */
export interface ArgumentProblem {
  readonly path: string;
  readonly message: string;
}

/** The most problems one check reports: enough to repair a call, bounded for huge argument objects. */
const MAX_ARGUMENT_PROBLEMS = 20;

/**
 * A checker of call arguments against a tool's args schema, reporting every problem (up to 20) with
 * its path, as a model needs to repair its call. Compiled with the same Ajv settings as examples
 * (RE2 patterns, so a schema's regex runs in linear time). Throws when the schema does not compile.
 */
export function argumentChecker(schema: JsonObject): (args: unknown) => ArgumentProblem[] {
  const validate = compileArgsSchema(schema, true);
  return (args) => {
    if (validate(args)) return [];
    return (validate.errors ?? []).slice(0, MAX_ARGUMENT_PROBLEMS).map((e) => {
      const missing = (e.params as { missingProperty?: string }).missingProperty;
      const path = e.keyword === "required" && missing ? `${e.instancePath}/${missing}` : e.instancePath;
      return { path, message: e.message ?? "is not valid" };
    });
  };
}

/** What is wrong with a list of strings: how many there are, or the length of one (quoted). */
function listProblem(items: readonly unknown[], count: Limit, item: Limit): string | undefined {
  const tooMany = sizeProblem(count, items.length);
  if (tooMany) return tooMany;
  for (const value of items) {
    if (typeof value !== "string") return `${count.field} must be strings`;
    const problem = sizeProblem(item, value.length);
    if (problem) return `${problem} (${quoteInput(value)})`;
  }
  return undefined;
}

/**
 * Examples must satisfy the args schema; the error names tool, example index and field. Yields before
 * the compile (tens of milliseconds for a schema near its bound) and before each example.
 */
function* validateExamples(
  name: string,
  schema: JsonObject,
  examples: readonly ToolExample[],
): Generator<void, void> {
  yield;
  let validate: ValidateFunction;
  try {
    validate = compileArgsSchema(schema, false);
  } catch (err) {
    if (err instanceof UnsupportedPattern)
      throw invalidArgument(
        `tool "${name}": args schema pattern ${JSON.stringify(err.pattern)} at ${patternPath(schema, err.pattern) ?? "(unknown)"} is not supported: ${err.message}; patterns use RE2 syntax (no lookaround or backreferences)`,
      );
    throw invalidArgument(`tool "${name}": args schema does not compile: ${(err as Error).message}`);
  }
  for (const [i, ex] of examples.entries()) {
    yield;
    let valid: boolean;
    try {
      valid = validate(ex.args);
    } catch (err) {
      // A RangeError from the stack, say: the caller's schema and example, not the server, failed.
      throw invalidArgument(
        `tool "${name}": example ${i} could not be checked against the args schema: ${(err as Error).message}`,
      );
    }
    if (valid) continue;
    const e = validate.errors?.[0];
    const field = e
      ? e.instancePath || (e.params as { missingProperty?: string }).missingProperty || "(root)"
      : "(root)";
    const path = e?.keyword === "required" ? `/${field}` : field;
    throw invalidArgument(
      `tool "${name}": example ${i} does not match the args schema at ${path}: ${e?.message ?? "invalid"}`,
    );
  }
}

/** JSON pointer (within the args schema) of the first `pattern` or `patternProperties` key equal to `pattern`. */
function patternPath(schema: JsonValue, pattern: string, at = ""): string | undefined {
  if (typeof schema !== "object" || schema === null) return undefined;
  for (const [key, value] of Object.entries(schema)) {
    const here = `${at}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    if (key === "pattern" && value === pattern) return here;
    if (key === "patternProperties" && isObject(value) && Object.hasOwn(value, pattern))
      return `${here}/${pattern.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    const inner = patternPath(value, pattern, here);
    if (inner) return inner;
  }
  return undefined;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
