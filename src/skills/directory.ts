import type { Caller } from "../caller/caller.ts";
import { LIMITS, withinLimit } from "../limits.ts";
import { estimateTokens } from "../text/tokens.ts";
import type { SkillContext } from "./context.ts";
import { clip } from "./render.ts";
import { oneOf } from "./request.ts";
import { type CallOptions, sanitizer } from "./sanitize.ts";
import { type SkillRow, visibleFilter } from "./store.ts";

const DIRECTORY_FIELDS = ["name", "title", "trigger", "description", "task_type", "tags"] as const;
export type DirectoryField = (typeof DIRECTORY_FIELDS)[number];

export interface RenderSkillDirectoryInput {
  readonly maxEntries?: number;
  readonly fields?: readonly DirectoryField[];
}

export interface RenderSkillDirectoryResult {
  readonly text: string;
  readonly entryCount: number;
  readonly totalVisible: number;
  readonly tokenEstimate: number;
}

/** A short list of skills for a system prompt: `pinned` names first, then the most recently used. */
export function renderSkillDirectory(
  context: SkillContext,
  pinnedNames: readonly string[],
  caller: Caller,
  input: RenderSkillDirectoryInput = {},
  options: CallOptions = {},
): RenderSkillDirectoryResult {
  const maxEntries = withinLimit(LIMITS.skillDirectoryMaxEntries, input.maxEntries);
  const fields = input.fields && input.fields.length > 0 ? input.fields : (["name", "trigger"] as const);
  for (const field of fields) oneOf("field", field, DIRECTORY_FIELDS);
  const where = visibleFilter(caller, undefined);
  const pinned = pinnedNames.slice(0, maxEntries);
  const pinnedRows =
    pinned.length > 0 ? context.store.visibleByName(caller, pinned) : new Map<string, SkillRow>();
  const entries: SkillRow[] = pinned.flatMap((name) => {
    const row = pinnedRows.get(name);
    return row ? [row] : [];
  });
  const rest = maxEntries - entries.length;
  if (rest > 0) {
    const exclude = entries.map((row) => row.seq);
    const notPinned = exclude.length > 0 ? ` AND s.seq NOT IN (${exclude.map(() => "?").join(",")})` : "";
    entries.push(
      ...context.store.all<SkillRow>(
        `SELECT s.* FROM skills s WHERE ${where.sql}${notPinned}
         ORDER BY s.last_used_at_ms IS NULL, s.last_used_at_ms DESC, s.use_count DESC, s.name LIMIT ?`,
        [...where.params, ...exclude, rest],
      ),
    );
  }
  const totalVisible =
    context.store.get<{ n: number }>(`SELECT count(*) AS n FROM skills s WHERE ${where.sql}`, where.params)
      ?.n ?? 0;
  const sanitize = sanitizer(options.toolGate, context.redaction);
  const lines = entries.map((row) => {
    const clean = sanitize(row);
    const parts: string[] = [];
    for (const field of fields) {
      if (field === "name") continue;
      if (field === "title") parts.push(clean(row.title));
      if (field === "trigger") parts.push(clip(clean(row.trigger_text), 160));
      if (field === "description") parts.push(clip(clean(row.description), 200));
      if (field === "task_type") parts.push(`[${row.task_type}]`);
      if (field === "tags") {
        const tags = JSON.parse(row.tags) as string[];
        if (tags.length > 0) parts.push(`(${tags.map(clean).join(", ")})`);
      }
    }
    return parts.length > 0 ? `- ${row.name}: ${parts.join(" ").replace(/\s+/g, " ")}` : `- ${row.name}`;
  });
  const more =
    totalVisible > entries.length ? `\n(${totalVisible - entries.length} more: use skill_search)` : "";
  const text =
    entries.length === 0
      ? ""
      : `Skills (procedures you can load with skill_get; find others with skill_search):\n${lines.join("\n")}${more}`;
  const tokenEstimate = estimateTokens(text);
  context.emit("skill_directory_rendered", caller, {
    entry_count: entries.length,
    total_visible: totalVisible,
    tokens_est: tokenEstimate,
  });
  return { text, entryCount: entries.length, totalVisible, tokenEstimate };
}
