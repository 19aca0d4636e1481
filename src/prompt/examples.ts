import type { ToolExample } from "../discovery/types.ts";
import type { JsonValue } from "../json.ts";
import { LIMITS } from "../limits.ts";

export interface RenderExamplesOptions {
  /** At most this many examples; default 3 (docs/design.md §4). */
  readonly max?: number;
  /** Append ` — description` to each line; default true. */
  readonly includeDescriptions?: boolean;
  /** Keep only examples carrying at least one of these tags (case-insensitive); empty = all. */
  readonly filterTags?: readonly string[];
}

const DEFAULT_MAX_EXAMPLES = LIMITS.maxExamplesPerTool.default;

const TAG_RANK: Readonly<Record<string, number>> = {
  minimal: 0,
  common: 1,
  "edge-case": 2,
  edge_case: 2,
  edge: 2,
};
const OTHER_RANK = 3;

const rankOf = (example: ToolExample): number =>
  Math.min(OTHER_RANK, ...example.tags.map((t) => TAG_RANK[t.toLowerCase()] ?? OTHER_RANK));

/** JSON with object keys sorted, no whitespace: the same args always render to the same bytes. */
function compactJson(value: JsonValue): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(compactJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${compactJson(value[k] ?? null)}`).join(",")}}`;
}

/**
 * One line per example, `- {"arg":1} — description`, ordered minimal → common → edge-case (by tag;
 * untagged/other after; ties keep the tool's own order), capped at `max`.
 */
export function renderExamples(
  examples: readonly ToolExample[],
  options: RenderExamplesOptions = {},
): string[] {
  const max = Math.max(0, options.max ?? DEFAULT_MAX_EXAMPLES);
  const includeDescriptions = options.includeDescriptions ?? true;
  const filter = new Set((options.filterTags ?? []).map((t) => t.toLowerCase()));
  return examples
    .map((example, index) => ({ example, index, rank: rankOf(example) }))
    .filter(({ example }) => filter.size === 0 || example.tags.some((t) => filter.has(t.toLowerCase())))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .slice(0, max)
    .map(({ example }) => {
      const args = compactJson(example.args);
      const description = oneLine(example.description);
      return includeDescriptions && description !== "" ? `- ${args} — ${description}` : `- ${args}`;
    });
}

export const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim();
