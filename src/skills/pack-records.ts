import { posix } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import { yamlValue } from "../text/yaml.ts";
import { type FileKind, kindOf, type PackFile, type PackProblem } from "./pack.ts";

/** Finding the skill-shaped records in a pack file (markdown front matter, YAML, JSON, JSON lines). */

/** One skill-shaped record found in a file, before validation. */
export interface RawRecord {
  readonly file: string;
  readonly line: number | undefined;
  readonly data: Record<string, unknown>;
  readonly body: string | undefined;
  readonly kind: FileKind;
  /** Slug used when the record has no name. */
  readonly slug: string;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function slugify(text: string): string {
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

export function recordsOf(file: PackFile, problems: PackProblem[]): RawRecord[] {
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
