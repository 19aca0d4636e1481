import { type Document, isMap, isPair, isScalar, LineCounter, type Node, parseDocument } from "yaml";
import type { z } from "zod";
import { yamlValue } from "../text/yaml.ts";
import { didYouMean } from "./errors.ts";
import { type ConfigFile, configFileSchema } from "./schema.ts";

// A config file's problems as an operator reads them: each at its file, line and column, saying what
// is wrong and how to fix it, in file order.

/** A key's place in the file: `["catalogs", 0, "path"]`. */
export type Path = readonly PropertyKey[];

/** Parses and validates config text; `file` only labels the problems. */
export function parseConfigText(
  text: string,
  file: string,
): { value: ConfigFile | undefined; problems: string[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => {
      const pos = lineCounter.linePos(e.pos[0]);
      return `${file}:${pos.line}:${pos.col}: YAML syntax error: ${e.message.split("\n")[0]}; fix the YAML at that line`;
    });
    return { value: undefined, problems };
  }
  const converted = doc.contents === null ? { value: {} } : yamlValue(doc);
  if ("problem" in converted) return { value: undefined, problems: [`${file}: ${converted.problem}`] };
  const raw = converted.value;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return {
      value: undefined,
      problems: [
        `${file}:1:1: (top level): must be a mapping of keys such as \`catalogs:\`; see wayfind.example.yaml`,
      ],
    };
  }
  const result = configFileSchema.safeParse(raw);
  if (result.success) return { value: result.data, problems: [] };
  const located: { line: number; col: number; text: string }[] = [];
  const add = (path: Path, key: string | undefined, text: string) => {
    const pos = locate(doc, lineCounter, path, key) ?? { line: 0, col: 0 };
    const at = pos.line > 0 ? `${file}:${pos.line}:${pos.col}` : file;
    located.push({ ...pos, text: `${at}: ${text}` });
  };
  for (const issue of result.error.issues) {
    if (issue.code === "unrecognized_keys") {
      const known = knownKeysAt(configFileSchema, issue.path);
      for (const key of issue.keys) {
        const suggestion = didYouMean(key, known);
        const fix = suggestion
          ? `did you mean \`${suggestion}\`?`
          : `remove it; valid keys here: ${known.join(", ")}`;
        add(issue.path, key, `${formatPath([...issue.path, key])}: unknown key; ${fix}`);
      }
    } else {
      const value = valueAt(raw, issue.path);
      add(issue.path, undefined, `${formatPath(issue.path)}: ${describeIssue(issue, value)}`);
    }
  }
  // In file order, so the list reads top to bottom like the file.
  located.sort((a, b) => a.line - b.line || a.col - b.col);
  return { value: undefined, problems: located.map((p) => p.text) };
}

/** What is wrong with `value` and how to fix it, as the schema's `issue` says. */
export function describeIssue(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case "invalid_type": {
      if (value === undefined) return `is required; add it (${typeHint(issue.expected)})`;
      if (issue.expected === "int") return `must be a whole number, got ${show(value)}; drop the fraction`;
      return `must be ${typeHint(issue.expected)}, got ${kindOf(value)} ${show(value)}; change the value`;
    }
    case "invalid_value": {
      const allowed = issue.values.map(String);
      const suggestion = typeof value === "string" ? didYouMean(value, allowed) : undefined;
      const fix = suggestion ? `did you mean \`${suggestion}\`?` : `use one of: ${allowed.join(", ")}`;
      return `must be one of ${allowed.join(" | ")}, got ${show(value)}; ${fix}`;
    }
    case "too_small":
      if (issue.origin === "string") return "must not be empty; give it a value or remove the key";
      if (issue.origin === "array")
        return `must list at least ${issue.minimum} item${issue.minimum === 1 ? "" : "s"}; add one`;
      return `must be ${issue.inclusive ? "at least" : "more than"} ${issue.minimum}, got ${show(value)}; raise it`;
    case "too_big":
      if (issue.origin === "array") return `must list at most ${issue.maximum} items; remove some`;
      return `must be ${issue.inclusive ? "at most" : "less than"} ${issue.maximum}, got ${show(value)}; lower it`;
    case "custom":
      return issue.message;
    default:
      return `${issue.message}, got ${show(value)}; fix the value`;
  }
}

function typeHint(expected: string): string {
  switch (expected) {
    case "string":
      return "a string";
    case "number":
    case "int":
      return "a number";
    case "boolean":
      return "true or false";
    case "array":
      return "a list, e.g. [a, b]";
    case "object":
    case "record":
      return "a mapping of key: value";
    default:
      return expected;
  }
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return `a ${typeof value}`;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** `catalogs[0].examples["github.create"]`, the way an operator would point at the key. */
export function formatPath(path: Path): string {
  if (path.length === 0) return "(top level)";
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(String(part))) out += out === "" ? String(part) : `.${String(part)}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out;
}

function valueAt(root: unknown, path: Path): unknown {
  let cur = root;
  for (const part of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[part];
  }
  return cur;
}

/** Line and column of the node at `path` (or of `key` inside it), else of the nearest ancestor present. */
export function locate(
  doc: Document,
  lines: LineCounter,
  path: Path,
  key?: string,
): { line: number; col: number } | undefined {
  const keys = path.filter((p): p is string | number => typeof p !== "symbol");
  for (let n = keys.length; n >= 0; n--) {
    const node = (n === 0 ? doc.contents : doc.getIn(keys.slice(0, n), true)) as Node | null | undefined;
    if (!node) continue;
    let offset = node.range?.[0];
    if (key !== undefined && n === keys.length && isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key);
      if (pair && isScalar(pair.key)) offset = pair.key.range?.[0] ?? offset;
    }
    if (offset !== undefined) return lines.linePos(offset);
  }
  return undefined;
}

interface WalkDef {
  type: string;
  shape?: Record<string, z.core.$ZodType>;
  innerType?: z.core.$ZodType;
  element?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  in?: z.core.$ZodType;
}

/** Keys an object schema accepts at `path` (walks arrays, records and optional wrappers). */
function knownKeysAt(schema: z.core.$ZodType, path: Path): string[] {
  let def = schema._zod.def as unknown as WalkDef;
  const unwrap = () => {
    for (;;) {
      const inner = def.innerType ?? (def.type === "pipe" ? def.in : undefined);
      if (!inner) return;
      def = inner._zod.def as unknown as WalkDef;
    }
  };
  unwrap();
  for (const part of path) {
    const next =
      def.type === "array" ? def.element : def.type === "record" ? def.valueType : def.shape?.[String(part)];
    if (!next) return [];
    def = next._zod.def as unknown as WalkDef;
    unwrap();
  }
  return Object.keys(def.shape ?? {});
}
