import { createHash } from "node:crypto";
import { canonicalJson } from "../json.ts";
import { parseMarkdownBody } from "./markdown.ts";
import { type SkillContent, TASK_TYPES, type TaskType } from "./model.ts";
import {
  type PackFile,
  type PackLimits,
  type PackProblem,
  type ParsedPack,
  type ParsedSkill,
  SKILL_NAME,
} from "./pack.ts";
import { isPlainObject, type RawRecord, recordsOf } from "./pack-records.ts";

/** Validating a pack's records and naming its skills, deterministically. */

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

function contentHashOf(content: SkillContent): string {
  return createHash("sha256").update(canonicalJson(content)).digest("hex");
}

/** Bump when parsing or validation changes, so a reload re-parses packs loaded by an older build. */
const PARSER_VERSION = "1";

function sortedByPath(files: readonly PackFile[]): PackFile[] {
  return [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** sha256 over every skill file's path and content (order-independent) and the parser version. */
export function packFingerprint(files: readonly PackFile[]): string {
  const sorted = sortedByPath(files);
  const hash = createHash("sha256").update(`wayfind-skills-${PARSER_VERSION}\u0000`);
  for (const file of sorted) hash.update(`${file.path}\u0000${file.content}\u0000`);
  return hash.digest("hex");
}

/**
 * Parses and validates every file of a pack. Names default to `pack.<pack>.<slug>`; explicit names are
 * reserved first, then defaulted names take `-2`, `-3`, … in file-path order, so the result is the same
 * on every load. Explicit duplicates are problems.
 */
export function parsePack(
  packName: string,
  files: readonly PackFile[],
  limits: PackLimits,
  problems: PackProblem[],
  onFile?: (done: number, total: number) => void,
): ParsedPack {
  const sorted = sortedByPath(files);
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
