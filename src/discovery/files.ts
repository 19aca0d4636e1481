import { readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { invalidArgument } from "../errors.ts";
import type { JsonObject, JsonValue } from "../json.ts";
import { YAML_MAX_ALIAS_COUNT } from "../text/yaml.ts";
import { jsonSchemaProblems } from "./schema-dialects.ts";
import {
  LOADING_MODES,
  type LoadingMode,
  SIDE_EFFECTS,
  type SideEffects,
  type ToolExample,
  type ToolInput,
} from "./types.ts";
import { argsSchemaProblem, isObject, NAME_PATTERN } from "./validate.ts";

export interface CatalogFileOptions {
  /** Prefix for every tool (`ns.tool`); otherwise a tool's own `namespace` or MCP `server` field. */
  readonly namespace?: string;
  /** Default for tools that do not say. */
  readonly loadingMode?: LoadingMode;
  /**
   * A tool whose args schema is not a JSON Schema: a problem of the file (default), or a note (the
   * tool loads as written; CheckToolCall cannot judge its calls).
   */
  readonly invalidSchemas?: "refuse" | "warn";
}

export interface ParsedCatalog {
  readonly tools: ToolInput[];
  /** Non-fatal notes, e.g. names rewritten to the allowed character set. */
  readonly notes: string[];
}

/**
 * Reads a catalog file: JSONL (one tool per line), JSON (array or `{tools: [...]}`) or YAML. Accepts
 * MCP `tools/list` entries, OpenAI function definitions (bare or `{type: "function", function}`),
 * Anthropic tools and wayfind's own fields. Names with characters outside [A-Za-z0-9_.-] are
 * rewritten (each run becomes `_`) and the original kept as an alias. Any problem fails the whole
 * file, listing every problem with its line.
 */
export function parseCatalogFile(path: string, options: CatalogFileOptions = {}): ParsedCatalog {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw invalidArgument(`cannot read catalog ${path}: ${(err as Error).message}`);
  }
  return parseCatalogText(text, basename(path), formatOf(path), options, path);
}

type CatalogFormat = "jsonl" | "json" | "yaml";

function formatOf(path: string): CatalogFormat {
  const ext = extname(path).toLowerCase();
  if (ext === ".jsonl" || ext === ".ndjson") return "jsonl";
  if (ext === ".yaml" || ext === ".yml") return "yaml";
  return "json";
}

function parseCatalogText(
  text: string,
  label: string,
  format: CatalogFormat,
  options: CatalogFileOptions = {},
  path = label,
): ParsedCatalog {
  const problems: string[] = [];
  const entries: { value: unknown; line: number }[] = [];
  if (format === "jsonl") {
    text.split("\n").forEach((raw, i) => {
      const line = raw.trim();
      if (line === "" || line.startsWith("//")) return;
      try {
        entries.push({ value: JSON.parse(line), line: i + 1 });
      } catch (err) {
        problems.push(`${path}:${i + 1}: invalid JSON: ${(err as Error).message}`);
      }
    });
  } else {
    let doc: unknown;
    try {
      doc = format === "yaml" ? parseYaml(text, { maxAliasCount: YAML_MAX_ALIAS_COUNT }) : JSON.parse(text);
    } catch (err) {
      const line = err instanceof YAMLParseError ? (err.linePos?.[0]?.line ?? 0) : jsonErrorLine(text, err);
      throw invalidArgument(`${path}:${line}: invalid ${format.toUpperCase()}: ${(err as Error).message}`, [
        `${path}:${line}: ${(err as Error).message}`,
      ]);
    }
    const list = Array.isArray(doc) ? doc : isObject(doc) && Array.isArray(doc.tools) ? doc.tools : undefined;
    if (!list) throw invalidArgument(`${path}: expected an array of tools or {"tools": [...]}`);
    // Line numbers for JSON/YAML entries are approximate (the entry's index is exact).
    list.forEach((value, i) => {
      entries.push({ value, line: i + 1 });
    });
  }
  const where = (line: number) => (format === "jsonl" ? `${path}:${line}` : `${path}: tool #${line}`);
  const tools: ToolInput[] = [];
  const notes: string[] = [];
  const firstLine = new Map<string, number>();
  let refusedSchemas = 0;
  for (const { value, line } of entries) {
    try {
      const tool = toolInputFromCatalogEntry(value, options);
      const full =
        tool.namespace && !tool.name.startsWith(`${tool.namespace}.`)
          ? `${tool.namespace}.${tool.name}`
          : tool.name;
      const prev = firstLine.get(full);
      if (prev !== undefined) {
        problems.push(`${where(line)}: duplicate tool name "${full}" (first at ${where(prev)})`);
        continue;
      }
      firstLine.set(full, line);
      const schemaProblems = invalidSchema(tool);
      if (schemaProblems.length > 0) {
        const text = `${where(line)}: tool "${full}": args schema is not a valid JSON Schema at ${schemaProblems.join("; at ")}`;
        if (options.invalidSchemas === "warn") notes.push(`${text}; loaded as written, its calls unchecked`);
        else {
          refusedSchemas++;
          problems.push(text);
          continue;
        }
      }
      if (tool.aliases?.length && tool.aliases[0] !== undefined && tool.name !== tool.aliases[0])
        notes.push(`${where(line)}: name "${tool.aliases[0]}" rewritten to "${tool.name}"`);
      tools.push(tool);
    } catch (err) {
      problems.push(`${where(line)}: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) {
    // A catalog copied from a server whose schemas its clients accept anyway: say how to take it.
    const wayOut =
      refusedSchemas > 0
        ? ` (to load tools whose schema is not valid as written, unchecked, set invalid_schemas: warn on this catalog)`
        : "";
    throw invalidArgument(
      `${label}: ${problems.length} problem(s), nothing loaded: ${problems[0]}${wayOut}`,
      problems,
    );
  }
  return { tools, notes };
}

/** "<JSON path>: <what>" for each place the tool's args schema breaks its draft's rules (within its size bounds). */
function invalidSchema(tool: ToolInput): string[] {
  const schema = tool.argsSchema;
  // An oversize schema is refused for its size when registered, before anything reads it.
  if (!schema || argsSchemaProblem(schema) !== undefined) return [];
  return jsonSchemaProblems(schema).map((problem) => `${problem.path}: ${problem.message}`);
}

function jsonErrorLine(text: string, err: unknown): number {
  const m = /position (\d+)/.exec((err as Error).message);
  if (!m) return 0;
  return text.slice(0, Number(m[1])).split("\n").length;
}

/** One entry in any supported shape → ToolInput. Throws a plain Error naming the problem. */
function toolInputFromCatalogEntry(value: unknown, options: CatalogFileOptions = {}): ToolInput {
  if (!isObject(value)) throw new Error("a tool must be a JSON object");
  // OpenAI `{type: "function", function: {...}}`
  const v: JsonObject = value.type === "function" && isObject(value.function) ? value.function : value;
  // OpenAI plugin manifests (ai-plugin.json) name the model-facing fields `*_for_model`.
  const rawName = v.name ?? v.name_for_model;
  if (typeof rawName !== "string" || rawName.trim() === "")
    throw new Error('"name" is missing or not a string');
  const rawNs = options.namespace ?? str(v.namespace) ?? str(v.server);
  const namespace = rawNs ? safeName(rawNs).replace(/\./g, "_") : undefined;
  const name = safeName(rawName.trim());
  const aliases = strings(v.aliases, "aliases");
  if (name !== rawName) aliases.unshift(rawName);
  // A short human description and a model-facing one (plugin manifests) are both kept, short first:
  // listings show the first sentence, and search finds words from either.
  const description = [
    ...new Set([str(v.description) ?? str(v.description_for_human), str(v.description_for_model)]),
  ]
    .filter((d): d is string => d !== undefined && d.trim() !== "")
    .join("\n\n");
  const argsSchema = schemaOf(
    v.inputSchema ?? v.input_schema ?? v.parameters ?? v.args_schema ?? v.argsSchema,
    "args schema",
  );
  const outputSchema = schemaOf(v.outputSchema ?? v.output_schema, "output schema");
  const annotations = isObject(v.annotations) ? v.annotations : {};
  const tags = strings(v.tags, "tags");
  if (typeof v.category === "string" && v.category) tags.push(v.category);
  const title = str(v.title) ?? str(annotations.title) ?? str(v.name_for_human);
  const loading = str(v.loading_mode) ?? str(v.loadingMode) ?? options.loadingMode;
  if (loading !== undefined && !LOADING_MODES.includes(loading as LoadingMode))
    throw new Error(`loading_mode "${loading}" must be one of ${LOADING_MODES.join(", ")}`);
  const side = str(v.side_effects) ?? str(v.sideEffects);
  if (side !== undefined && !SIDE_EFFECTS.includes(side as SideEffects))
    throw new Error(`side_effects "${side}" must be one of ${SIDE_EFFECTS.join(", ")}`);
  return {
    name,
    ...(namespace ? { namespace } : {}),
    ...(title ? { title } : {}),
    description,
    tags,
    sideEffects: (side as SideEffects | undefined) ?? fromAnnotations(annotations),
    ...(loading ? { loadingMode: loading as LoadingMode } : {}),
    ...(argsSchema ? { argsSchema } : {}),
    ...(outputSchema ? { outputSchema } : {}),
    examples: examplesOf(v.examples ?? v.input_examples),
    aliases,
  };
}

/** MCP annotations hint at side effects; without hints a tool is assumed to reach outside. */
function fromAnnotations(a: JsonObject): SideEffects {
  if (a.readOnlyHint === true) return a.openWorldHint === true ? "external" : "read";
  if (a.destructiveHint === true || a.readOnlyHint === false)
    return a.openWorldHint === false ? "write" : "external";
  return "external";
}

function safeName(name: string): string {
  if (NAME_PATTERN.test(name)) return name;
  return name.replace(/[^A-Za-z0-9_.-]+/g, "_").replace(/^[.-]+/, "_");
}

function str(v: JsonValue | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function strings(v: JsonValue | undefined, what: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string"))
    throw new Error(`"${what}" must be a list of strings`);
  return [...(v as string[])];
}

function schemaOf(v: JsonValue | undefined, what: string): JsonObject | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw new Error(`${what} must be a JSON object`);
  return v;
}

function examplesOf(v: JsonValue | undefined): ToolExample[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error('"examples" must be a list');
  return v.map((ex, i) => {
    if (!isObject(ex)) throw new Error(`example ${i} must be an object with "args"`);
    const args = ex.args ?? ex.input ?? ex.arguments;
    if (!isObject(args)) throw new Error(`example ${i}: "args" must be a JSON object`);
    return { args, description: str(ex.description) ?? "", tags: strings(ex.tags, `example ${i} tags`) };
  });
}
