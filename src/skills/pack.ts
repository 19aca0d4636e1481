import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, join, posix, relative, resolve, sep } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import { canonicalJson } from "../json.ts";
import { LIMITS } from "../limits.ts";
import { yamlValue } from "../text/yaml.ts";
import { parseMarkdownBody } from "./markdown.ts";
import { type SkillContent, TASK_TYPES, type TaskType } from "./model.ts";

/** One file of an inline pack. `path` is relative to the pack root, `/`-separated. */
export interface PackFile {
  readonly path: string;
  readonly content: string;
}

/** One reason a pack is rejected. */
export interface PackProblem {
  readonly file: string;
  readonly line?: number;
  readonly field?: string;
  readonly reason: string;
}

export interface PackLimits {
  readonly maxFileBytes: number;
  readonly maxPackBytes: number;
  readonly maxFiles: number;
  readonly maxSkills: number;
}

export const DEFAULT_PACK_LIMITS: PackLimits = {
  maxFileBytes: 1024 * 1024,
  maxPackBytes: 32 * 1024 * 1024,
  maxFiles: 20_000,
  maxSkills: 50_000,
};

/** A validated skill of a pack, before it meets the store. */
export interface ParsedSkill {
  readonly content: SkillContent;
  readonly contentHash: string;
  readonly file: string;
  readonly line: number | undefined;
}

export interface ParsedPack {
  readonly skills: ParsedSkill[];
  readonly problems: PackProblem[];
  readonly fileCount: number;
  /** sha256 over every skill file's path and bytes: equal fingerprints mean an identical pack. */
  readonly fingerprint: string;
}

export function formatProblem(p: PackProblem): string {
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}`;
  return p.field ? `${where}: ${p.field}: ${p.reason}` : `${where}: ${p.reason}`;
}

export const PACK_NAME = new RegExp(`^[a-z0-9][a-z0-9_-]{0,${LIMITS.packName.max - 1}}$`);
export const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

type FileKind = "md" | "yaml" | "json" | "jsonl" | "agent";

function kindOf(path: string): FileKind | undefined {
  const base = posix.basename(path);
  if (base === "SKILL.md") return "agent";
  const lower = base.toLowerCase();
  if (lower.endsWith(".skill.md")) return "md";
  if (lower.endsWith(".skill.yaml") || lower.endsWith(".skill.yml")) return "yaml";
  if (lower.endsWith(".skill.json")) return "json";
  if (lower.endsWith(".skill.jsonl")) return "jsonl";
  return undefined;
}

// ---------------------------------------------------------------------------------------------------
// Reading

/** C0 controls other than tab/newline/form feed/carriage return, or U+FFFD from a failed decode. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is how binary files are detected
const BINARY_CHARS = /[\u0000-\u0008\u000B\u000E-\u001F\uFFFD]/;

function isBinaryText(text: string): boolean {
  return BINARY_CHARS.test(text);
}

/** Validates inline file paths: relative, `/`-separated, no traversal. */
export function checkInlinePath(path: string): string | undefined {
  if (path.length === 0) return "path is empty";
  if (path.length > 512) return "path is longer than 512 characters";
  if (path.includes("\u0000")) return "path contains a NUL character";
  if (path.includes("\\")) return "path must use '/' separators";
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path)) return "path must be relative to the pack root";
  if (path.split("/").some((segment) => segment === "..")) return "path traversal ('..') is not allowed";
  return undefined;
}

export function readInlineFiles(
  files: readonly PackFile[],
  limits: PackLimits,
  problems: PackProblem[],
): PackFile[] {
  if (files.length > limits.maxFiles) {
    problems.push({
      file: "(pack)",
      reason: `pack has ${files.length} files; the limit is ${limits.maxFiles}`,
    });
    return [];
  }
  const out: PackFile[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (const file of files) {
    const pathProblem = checkInlinePath(file.path);
    if (pathProblem) {
      problems.push({ file: JSON.stringify(file.path).slice(0, 200), reason: pathProblem });
      continue;
    }
    const path = posix.normalize(file.path);
    if (seen.has(path)) {
      problems.push({ file: path, reason: "the same path appears twice in the pack" });
      continue;
    }
    seen.add(path);
    if (!kindOf(path)) continue;
    const bytes = Buffer.byteLength(file.content, "utf8");
    total += bytes;
    if (bytes > limits.maxFileBytes) {
      problems.push({
        file: path,
        reason: `file is ${bytes} bytes; the limit is ${limits.maxFileBytes} bytes`,
      });
      continue;
    }
    if (isBinaryText(file.content)) {
      problems.push({
        file: path,
        reason: "file is binary (control characters or invalid UTF-8); expected text",
      });
      continue;
    }
    out.push({ path, content: file.content });
  }
  if (total > limits.maxPackBytes)
    problems.push({
      file: "(pack)",
      reason: `pack is ${total} bytes; the limit is ${limits.maxPackBytes} bytes`,
    });
  return out;
}

function isInside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Resolves a server-side pack path against the allowed roots. Relative paths resolve against the first
 * root; the real path (symlinks resolved) must lie inside one of the roots.
 */
export function resolvePackDir(path: string, roots: readonly string[]): { dir?: string; error?: string } {
  if (path.length === 0 || path.includes("\u0000")) return { error: "pack path is empty or invalid" };
  const base = roots[0] ?? process.cwd();
  let real: string;
  try {
    real = realpathSync(resolve(base, path));
  } catch {
    return { error: `pack folder ${JSON.stringify(path)} does not exist` };
  }
  const realRoots = roots.map((root) => {
    try {
      return realpathSync(root);
    } catch {
      return resolve(root);
    }
  });
  if (!realRoots.some((root) => isInside(root, real)))
    return { error: `pack folder ${JSON.stringify(path)} is outside the allowed pack roots` };
  if (!statSync(real).isDirectory()) return { error: `pack path ${JSON.stringify(path)} is not a folder` };
  return { dir: real };
}

const SKIPPED_DIRS = new Set(["node_modules", ".git"]);

export function readPackFolder(dir: string, limits: PackLimits, problems: PackProblem[]): PackFile[] {
  const out: PackFile[] = [];
  const visited = new Set<string>([dir]);
  let total = 0;
  let fileCount = 0;
  const decoder = new TextDecoder("utf-8", { fatal: true });

  const readOne = (abs: string, rel: string, size: number) => {
    fileCount++;
    if (fileCount > limits.maxFiles) {
      if (fileCount === limits.maxFiles + 1)
        problems.push({ file: "(pack)", reason: `pack has more than ${limits.maxFiles} skill files` });
      return;
    }
    if (size > limits.maxFileBytes) {
      problems.push({
        file: rel,
        reason: `file is ${size} bytes; the limit is ${limits.maxFileBytes} bytes`,
      });
      return;
    }
    total += size;
    if (total > limits.maxPackBytes) {
      if (total - size <= limits.maxPackBytes)
        problems.push({ file: "(pack)", reason: `pack is larger than ${limits.maxPackBytes} bytes` });
      return;
    }
    const bytes = readFileSync(abs);
    let text: string;
    try {
      if (bytes.includes(0)) throw new Error("NUL byte");
      text = decoder.decode(bytes);
    } catch {
      problems.push({
        file: rel,
        reason: "file is binary (control characters or invalid UTF-8); expected text",
      });
      return;
    }
    if (isBinaryText(text)) {
      problems.push({
        file: rel,
        reason: "file is binary (control characters or invalid UTF-8); expected text",
      });
      return;
    }
    out.push({ path: rel, content: text });
  };

  const walk = (absDir: string, relDir: string, depth: number) => {
    if (depth > 16) {
      problems.push({ file: relDir, reason: "folder nesting is deeper than 16 levels" });
      return;
    }
    const entries = readdirSync(absDir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const entry of entries) {
      if (entry.name.startsWith(".") || SKIPPED_DIRS.has(entry.name)) continue;
      const abs = join(absDir, entry.name);
      const rel = relDir === "" ? entry.name : `${relDir}/${entry.name}`;
      let target = abs;
      if (lstatSync(abs).isSymbolicLink()) {
        try {
          target = realpathSync(abs);
        } catch {
          problems.push({ file: rel, reason: "symlink target does not exist" });
          continue;
        }
        if (!isInside(dir, target)) {
          problems.push({ file: rel, reason: "symlink points outside the pack folder" });
          continue;
        }
      }
      const stat = statSync(target);
      if (stat.isDirectory()) {
        if (visited.has(target)) continue;
        visited.add(target);
        walk(target, rel, depth + 1);
      } else if (stat.isFile() && kindOf(rel)) {
        readOne(target, rel, stat.size);
      }
    }
  };
  walk(dir, "", 0);
  return out.map((file) => ({ path: file.path.split(sep).join("/"), content: file.content }));
}

// ---------------------------------------------------------------------------------------------------
// Parsing

/** One skill-shaped record found in a file, before validation. */
interface RawRecord {
  readonly file: string;
  readonly line: number | undefined;
  readonly data: Record<string, unknown>;
  readonly body: string | undefined;
  readonly kind: FileKind;
  /** Slug used when the record has no name. */
  readonly slug: string;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function slugify(text: string): string {
  const slug = text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64)
    .replace(/-+$/, "");
  return slug.length > 0 ? slug : "skill";
}

function stemOf(path: string, kind: FileKind): string {
  if (kind === "agent") return posix.basename(posix.dirname(path)) || "skill";
  return posix.basename(path).replace(/\.skill\.(md|ya?ml|jsonl?)$/i, "");
}

function parseYaml(
  text: string,
  file: string,
  lineOffset: number,
  problems: PackProblem[],
): { value: unknown; lineOf: (offset: number) => number } | undefined {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    for (const error of doc.errors) {
      const line = error.linePos?.[0]?.line;
      problems.push({
        file,
        line: line === undefined ? undefined : line + lineOffset,
        reason: `invalid YAML: ${error.message.split("\n")[0]}`,
      });
    }
    return undefined;
  }
  const converted = yamlValue(doc);
  if ("problem" in converted) {
    problems.push({ file, line: 1 + lineOffset, reason: `invalid YAML: ${converted.problem}` });
    return undefined;
  }
  return {
    value: converted.value,
    lineOf: (offset) => lineCounter.linePos(offset).line + lineOffset,
  };
}

/** Line numbers of the items of a top-level YAML list (or of its `skills:` list). */
function yamlItemLines(text: string): number[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  let node: unknown = doc.contents;
  if (node && typeof node === "object" && "get" in node && typeof node.get === "function") {
    const skills: unknown = node.get("skills", true);
    if (skills) node = skills;
  }
  if (node && typeof node === "object" && "items" in node && Array.isArray(node.items)) {
    return node.items.map((item: unknown) => {
      const range =
        item && typeof item === "object" && "range" in item && Array.isArray(item.range) ? item.range : [0];
      return lineCounter.linePos(Number(range[0] ?? 0)).line;
    });
  }
  return [];
}

function jsonErrorLine(text: string, message: string): number | undefined {
  const line = /line (\d+)/.exec(message);
  if (line) return Number(line[1]);
  const position = /position (\d+)/.exec(message);
  if (!position) return undefined;
  return text.slice(0, Number(position[1])).split("\n").length;
}

function splitFrontMatter(
  text: string,
  file: string,
  problems: PackProblem[],
): { front: string; body: string; bodyLine: number } | undefined {
  const normalised = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  if (!normalised.startsWith("---\n")) {
    problems.push({
      file,
      line: 1,
      reason: "missing YAML front matter: the file must start with a '---' line",
    });
    return undefined;
  }
  const end = normalised.indexOf("\n---", 3);
  const close = end < 0 ? -1 : normalised.slice(end + 4).search(/^[ \t]*(\n|$)/);
  if (end < 0 || close !== 0) {
    problems.push({ file, line: 1, reason: "YAML front matter is not closed by a '---' line" });
    return undefined;
  }
  const front = normalised.slice(4, end + 1);
  const afterClose = normalised.indexOf("\n", end + 4);
  const body = afterClose < 0 ? "" : normalised.slice(afterClose + 1);
  return { front, body, bodyLine: front.split("\n").length + 2 };
}

function recordsOf(file: PackFile, problems: PackProblem[]): RawRecord[] {
  const kind = kindOf(file.path);
  if (!kind) return [];
  const stem = stemOf(file.path, kind);
  const base = { file: file.path, kind, body: undefined };
  const fromList = (items: unknown[], lines: (i: number) => number | undefined): RawRecord[] => {
    const records: RawRecord[] = [];
    items.forEach((item, i) => {
      const line = lines(i);
      if (!isPlainObject(item)) {
        problems.push({
          file: file.path,
          line,
          field: `[${i}]`,
          reason: "must be a mapping/object describing a skill",
        });
        return;
      }
      const slug =
        typeof item.title === "string" && item.title.trim() ? slugify(item.title) : `${stem}-${i + 1}`;
      records.push({ ...base, line, data: item, slug: items.length === 1 ? slugify(stem) : slug });
    });
    return records;
  };

  switch (kind) {
    case "md":
    case "agent": {
      const parts = splitFrontMatter(file.content, file.path, problems);
      if (!parts) return [];
      const parsed = parseYaml(parts.front, file.path, 1, problems);
      if (!parsed) return [];
      if (!isPlainObject(parsed.value)) {
        problems.push({ file: file.path, line: 2, reason: "YAML front matter must be a mapping of fields" });
        return [];
      }
      return [{ file: file.path, kind, line: 1, data: parsed.value, body: parts.body, slug: slugify(stem) }];
    }
    case "yaml": {
      const parsed = parseYaml(file.content, file.path, 0, problems);
      if (!parsed) return [];
      const value =
        isPlainObject(parsed.value) && Array.isArray(parsed.value.skills)
          ? parsed.value.skills
          : parsed.value;
      if (Array.isArray(value)) {
        const lines = yamlItemLines(file.content);
        return fromList(value, (i) => lines[i]);
      }
      if (isPlainObject(value)) return [{ ...base, line: 1, data: value, slug: slugify(stem) }];
      problems.push({
        file: file.path,
        line: 1,
        reason: "expected a skill mapping, a list of skills or {skills: [...]}",
      });
      return [];
    }
    case "json": {
      let value: unknown;
      try {
        value = JSON.parse(file.content);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        problems.push({
          file: file.path,
          line: jsonErrorLine(file.content, message),
          reason: `invalid JSON: ${message}`,
        });
        return [];
      }
      if (isPlainObject(value) && Array.isArray(value.skills)) value = value.skills;
      if (Array.isArray(value)) return fromList(value, () => undefined);
      if (isPlainObject(value)) return [{ ...base, line: 1, data: value, slug: slugify(stem) }];
      problems.push({
        file: file.path,
        line: 1,
        reason: "expected a skill object, an array of skills or {skills: [...]}",
      });
      return [];
    }
    case "jsonl": {
      const items: unknown[] = [];
      const lines: number[] = [];
      file.content.split("\n").forEach((text, i) => {
        if (text.trim().length === 0) return;
        try {
          items.push(JSON.parse(text));
          lines.push(i + 1);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          problems.push({ file: file.path, line: i + 1, reason: `invalid JSON: ${message}` });
        }
      });
      return fromList(items, (i) => lines[i]);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Validation

const KNOWN_FIELDS = new Set([
  "name",
  "title",
  "description",
  "trigger",
  "task_type",
  "taskType",
  "tags",
  "steps",
  "preconditions",
  "failure_modes",
  "failureModes",
]);
const MAX_TEXT = 4000;
const MAX_LIST = 100;

function normaliseText(text: string): string {
  return text.replace(/\r\n?/g, "\n").normalize("NFC").trim();
}

class RecordValidator {
  constructor(
    private readonly record: RawRecord,
    private readonly problems: PackProblem[],
  ) {}

  problem(field: string, reason: string): void {
    this.problems.push({ file: this.record.file, line: this.record.line, field, reason });
  }

  optionalText(field: string, value: unknown, max = MAX_TEXT): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string") {
      this.problem(field, `must be a string, got ${describe(value)}`);
      return undefined;
    }
    const text = normaliseText(value);
    if (text.length > max) this.problem(field, `is ${text.length} characters; the limit is ${max}`);
    return text;
  }

  optionalList(field: string, value: unknown, maxItem = MAX_TEXT): string[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) {
      this.problem(field, `must be a list of strings, got ${describe(value)}`);
      return undefined;
    }
    if (value.length > MAX_LIST) this.problem(field, `has ${value.length} items; the limit is ${MAX_LIST}`);
    const out: string[] = [];
    value.forEach((item, i) => {
      if (typeof item !== "string")
        this.problem(
          `${field}[${i}]`,
          `must be a string, got ${describe(item)}${isPlainObject(item) ? " (in YAML, quote text that contains ': ')" : ""}`,
        );
      else if (item.trim().length === 0) this.problem(`${field}[${i}]`, "must not be empty");
      else if (item.length > maxItem)
        this.problem(`${field}[${i}]`, `is ${item.length} characters; the limit is ${maxItem}`);
      else out.push(normaliseText(item));
    });
    return out;
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "a mapping" : `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}

function humanise(slug: string): string {
  const words = slug.replace(/[-_.]+/g, " ").trim();
  return words.length > 0 ? words[0]?.toUpperCase() + words.slice(1) : "Skill";
}

interface ValidRecord {
  readonly record: RawRecord;
  readonly explicitName: string | undefined;
  readonly content: Omit<SkillContent, "name">;
}

function validateRecord(record: RawRecord, problems: PackProblem[]): ValidRecord | undefined {
  const before = problems.length;
  const v = new RecordValidator(record, problems);
  const data = record.data;
  const name = v.optionalText("name", data.name, 128);
  if (name !== undefined && !SKILL_NAME.test(name))
    v.problem(
      "name",
      "must start with a letter or digit and use only letters, digits, '.', '_' and '-' (max 128)",
    );
  const body = record.body !== undefined ? parseMarkdownBody(record.body) : undefined;
  let title = v.optionalText("title", data.title, 200);
  let description = v.optionalText("description", data.description) ?? "";
  let trigger = v.optionalText("trigger", data.trigger) ?? "";
  if (record.kind === "agent") {
    // Agent Skills: `description` says what the skill does and when to use it, so it is both.
    if (description.length === 0)
      v.problem("description", "Agent Skills SKILL.md requires a non-empty description");
    if (trigger.length === 0) trigger = description;
  }
  if (trigger.length === 0) trigger = description;
  if (trigger.length === 0)
    v.problem("trigger", "trigger (or description) is required and must be a non-empty string");
  if (description.length === 0) description = trigger;
  // Agent Skills keep custom fields under `metadata`; task_type and tags may live there.
  const meta = record.kind === "agent" && isPlainObject(data.metadata) ? data.metadata : {};
  const rawType = data.task_type ?? data.taskType ?? meta.task_type;
  let taskType: TaskType = "unknown";
  if (rawType !== undefined) {
    if (typeof rawType === "string" && (TASK_TYPES as readonly string[]).includes(rawType))
      taskType = rawType as TaskType;
    else v.problem("task_type", `must be one of ${TASK_TYPES.join(", ")}, got ${describe(rawType)}`);
  }
  const tags = v.optionalList("tags", data.tags ?? meta.tags, 64) ?? [];
  const beforeSteps = problems.length;
  let steps = v.optionalList("steps", data.steps);
  if (steps === undefined && body) steps = body.steps;
  if (steps === undefined || (steps.length === 0 && problems.length === beforeSteps))
    v.problem("steps", "steps (or a markdown body) must be a non-empty list of strings");
  const preconditions = v.optionalList("preconditions", data.preconditions) ?? body?.preconditions ?? [];
  const failureModes =
    v.optionalList("failure_modes", data.failure_modes ?? data.failureModes) ?? body?.failureModes ?? [];
  title ??= body?.title ?? humanise(record.slug);
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) if (!KNOWN_FIELDS.has(key)) extra[key] = value;
  if (problems.length > before) return undefined;
  return {
    record,
    explicitName: name,
    content: {
      title,
      description,
      trigger,
      taskType,
      tags,
      steps: steps ?? [],
      preconditions,
      failureModes,
      extra,
    },
  };
}

export function contentHashOf(content: SkillContent): string {
  return createHash("sha256").update(canonicalJson(content)).digest("hex");
}

/**
 * Parses and validates every file of a pack. Names default to `pack.<pack>.<slug>`; explicit names are
 * reserved first, then defaulted names take `-2`, `-3`, … in file-path order, so the result is the same
 * on every load. Explicit duplicates are problems.
 */
/** Bump when parsing or validation changes, so a reload re-parses packs loaded by an older build. */
const PARSER_VERSION = "1";

/** sha256 over every skill file's path and content (order-independent) and the parser version. */
export function packFingerprint(files: readonly PackFile[]): string {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const hash = createHash("sha256").update(`wayfind-skills-${PARSER_VERSION}\u0000`);
  for (const file of sorted) hash.update(`${file.path}\u0000${file.content}\u0000`);
  return hash.digest("hex");
}

export function parsePack(
  packName: string,
  files: readonly PackFile[],
  limits: PackLimits,
  problems: PackProblem[],
  onFile?: (done: number, total: number) => void,
): ParsedPack {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const valid: ValidRecord[] = [];
  sorted.forEach((file, i) => {
    for (const record of recordsOf(file, problems)) {
      const ok = validateRecord(record, problems);
      if (ok) valid.push(ok);
    }
    onFile?.(i + 1, sorted.length);
  });
  if (valid.length > limits.maxSkills)
    problems.push({
      file: "(pack)",
      reason: `pack has ${valid.length} skills; the limit is ${limits.maxSkills}`,
    });

  const taken = new Map<string, ValidRecord>();
  for (const entry of valid) {
    if (entry.explicitName === undefined) continue;
    const first = taken.get(entry.explicitName);
    if (first) {
      problems.push({
        file: entry.record.file,
        line: entry.record.line,
        field: "name",
        reason: `duplicate name ${JSON.stringify(entry.explicitName)}, first defined in ${first.record.file}${first.record.line ? `:${first.record.line}` : ""}`,
      });
    } else taken.set(entry.explicitName, entry);
  }
  const skills: ParsedSkill[] = [];
  for (const entry of valid) {
    let name = entry.explicitName;
    if (name === undefined) {
      const base = `pack.${packName}.${entry.record.slug}`;
      name = base;
      for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
      taken.set(name, entry);
    } else if (taken.get(name) !== entry) continue;
    const content: SkillContent = { name, ...entry.content };
    skills.push({
      content,
      contentHash: contentHashOf(content),
      file: entry.record.file,
      line: entry.record.line,
    });
  }
  if (skills.length === 0 && problems.length === 0)
    problems.push({
      file: "(pack)",
      reason: "no skill files found (*.skill.md|yaml|yml|json|jsonl or <name>/SKILL.md)",
    });
  return { skills, problems, fileCount: sorted.length, fingerprint: packFingerprint(files) };
}
