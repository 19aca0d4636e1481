import { createHash } from "node:crypto";
import { Ajv, type ValidateFunction } from "ajv";
import { invalidArgument } from "../errors.ts";
import {
  type JsonObject,
  type JsonValue,
  LOADING_MODES,
  type LoadingMode,
  SIDE_EFFECTS,
  type SideEffects,
  type Tool,
  type ToolExample,
  type ToolInput,
} from "./types.ts";

export const LIMITS = {
  nameLength: 128,
  descriptionLength: 16_384,
  titleLength: 256,
  tags: 32,
  tagLength: 64,
  aliases: 16,
  examples: 16,
  toolsPerRequest: 50_000,
} as const;

/** Provider-safe names plus `.` for namespaces; `_` may lead (RapidAPI-style names do). */
export const NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const NAMESPACE_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_-]*$/;

export type ToolRecord = Omit<Tool, "source" | "owner">;

/** Checks one name; returns the problem or undefined. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "name is empty";
  if (name.length > LIMITS.nameLength) return `name is longer than ${LIMITS.nameLength} characters`;
  if (!NAME_PATTERN.test(name))
    return `name "${name}" has characters outside [A-Za-z0-9_.-] (or starts with "." or "-")`;
  return undefined;
}

/** `ns.name` unless the name already carries the namespace. */
export function fullName(input: ToolInput): string {
  const ns = input.namespace ?? "";
  return ns && !input.name.startsWith(`${ns}.`) ? `${ns}.${input.name}` : input.name;
}

/** Validates and normalises one input into the stored record (with hash). Throws invalid_argument. */
export function toRecord(input: ToolInput, index: number): ToolRecord {
  const where = typeof input.name === "string" && input.name ? `tool "${input.name}"` : `tool #${index}`;
  const fail = (msg: string) => invalidArgument(`${where}: ${msg}`);
  if (typeof input.name !== "string") throw fail("name must be a string");
  const namespace = input.namespace ?? "";
  if (namespace && !NAMESPACE_PATTERN.test(namespace))
    throw fail(`namespace "${namespace}" must match [A-Za-z0-9_-]+`);
  const name = fullName(input);
  const bad = nameProblem(name);
  if (bad) throw fail(bad);
  const description = input.description ?? "";
  if (typeof description !== "string") throw fail("description must be a string");
  if (description.length > LIMITS.descriptionLength)
    throw fail(`description is ${description.length} characters; the limit is ${LIMITS.descriptionLength}`);
  const title = input.title ?? "";
  if (title.length > LIMITS.titleLength) throw fail(`title is longer than ${LIMITS.titleLength} characters`);
  const tags = [...new Set(input.tags ?? [])];
  if (tags.length > LIMITS.tags) throw fail(`has ${tags.length} tags; the limit is ${LIMITS.tags}`);
  for (const tag of tags)
    if (typeof tag !== "string" || tag.length === 0 || tag.length > LIMITS.tagLength)
      throw fail(
        `tag ${JSON.stringify(tag)} must be a non-empty string of at most ${LIMITS.tagLength} characters`,
      );
  const sideEffects: SideEffects = input.sideEffects ?? "external";
  if (!SIDE_EFFECTS.includes(sideEffects))
    throw fail(`side_effects must be one of ${SIDE_EFFECTS.join(", ")}`);
  const loadingMode: LoadingMode = input.loadingMode ?? "deferred";
  if (!LOADING_MODES.includes(loadingMode))
    throw fail(`loading_mode must be one of ${LOADING_MODES.join(", ")}`);
  const argsSchema = input.argsSchema ?? { type: "object", properties: {} };
  if (!isObject(argsSchema)) throw fail("args schema must be a JSON object");
  const outputSchema = input.outputSchema ?? null;
  if (outputSchema !== null && !isObject(outputSchema)) throw fail("output schema must be a JSON object");
  const aliases = [...new Set(input.aliases ?? [])].filter((a) => a !== name);
  if (aliases.length > LIMITS.aliases) throw fail(`has more than ${LIMITS.aliases} aliases`);
  for (const alias of aliases) {
    if (typeof alias !== "string" || alias.length === 0 || alias.length > LIMITS.nameLength)
      throw fail(
        `alias ${JSON.stringify(alias)} must be a non-empty string of at most ${LIMITS.nameLength} characters`,
      );
  }
  const examples = (input.examples ?? []).map((ex, i) => toExample(ex, i, fail));
  if (examples.length > LIMITS.examples) throw fail(`has more than ${LIMITS.examples} examples`);
  if (examples.length > 0) validateExamples(name, argsSchema, examples);
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
  return { ...body, hash: sha256(canonicalJson(body as unknown as JsonValue)) };
}

function toExample(ex: ToolExample, i: number, fail: (m: string) => Error): ToolExample {
  if (!isObject(ex) || !isObject(ex.args)) throw fail(`example ${i}: "args" must be a JSON object`);
  return { args: ex.args, description: ex.description ?? "", tags: [...(ex.tags ?? [])] };
}

let ajv: Ajv | undefined;

/** Examples must satisfy the args schema; the error names tool, example index and field. */
function validateExamples(name: string, schema: JsonObject, examples: readonly ToolExample[]): void {
  ajv ??= new Ajv({ strict: false, allErrors: false, validateFormats: false, validateSchema: false });
  let validate: ValidateFunction;
  try {
    // $schema/$id may name drafts Ajv does not load; they do not change validation of examples here.
    const { $schema: _s, $id: _i, ...rest } = schema;
    validate = ajv.compile(rest);
  } catch (err) {
    throw invalidArgument(`tool "${name}": args schema does not compile: ${(err as Error).message}`);
  }
  examples.forEach((ex, i) => {
    if (validate(ex.args)) return;
    const e = validate.errors?.[0];
    const field = e
      ? e.instancePath || (e.params as { missingProperty?: string }).missingProperty || "(root)"
      : "(root)";
    const path = e?.keyword === "required" ? `/${field}` : field;
    throw invalidArgument(
      `tool "${name}": example ${i} does not match the args schema at ${path}: ${e?.message ?? "invalid"}`,
    );
  });
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** JSON with object keys sorted at every depth, so equal content hashes equally. */
export function canonicalJson(value: JsonValue): string {
  // Native stringify with a key-sorting replacer is several times faster than a recursive writer.
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
