import { estimateTokens } from "../text/tokens.ts";
import type { SkillContent } from "./model.ts";

/** The text of a skill as a caller may see it (already redacted and tool-gated). */
export type SkillView = Omit<SkillContent, "extra">;

export type ContextFormat = "raw" | "injection";

/**
 * Structured compression, least valuable first: failure modes, preconditions, description and tags,
 * then shorter and fewer steps. Dropping whole skills and hard truncation come after these.
 */
interface Level {
  failureModes: boolean;
  preconditions: boolean;
  details: boolean;
  maxSteps: number;
  maxStepChars: number;
}

const LEVELS: readonly Level[] = [
  { failureModes: true, preconditions: true, details: true, maxSteps: Infinity, maxStepChars: Infinity },
  { failureModes: false, preconditions: true, details: true, maxSteps: Infinity, maxStepChars: Infinity },
  { failureModes: false, preconditions: false, details: true, maxSteps: Infinity, maxStepChars: Infinity },
  { failureModes: false, preconditions: false, details: false, maxSteps: Infinity, maxStepChars: Infinity },
  { failureModes: false, preconditions: false, details: false, maxSteps: 10, maxStepChars: 200 },
  { failureModes: false, preconditions: false, details: false, maxSteps: 6, maxStepChars: 100 },
  { failureModes: false, preconditions: false, details: false, maxSteps: 4, maxStepChars: 60 },
];

/** `text` cut to at most `max` characters, ending in "…" when cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

function attr(text: string): string {
  return text.replace(/[&"<>\n]/g, (c) => (c === "\n" ? " " : `&#${c.charCodeAt(0)};`));
}

function renderSkill(skill: SkillView, level: Level, format: ContextFormat): string {
  const lines: string[] = [];
  if (format === "raw") lines.push(`## ${skill.name} — ${skill.title}`);
  else lines.push(`<skill name="${attr(skill.name)}" title="${attr(skill.title)}">`);
  lines.push(`When: ${skill.trigger}`);
  if (level.details && skill.description !== skill.trigger) lines.push(skill.description);
  if (level.details && skill.tags.length > 0) lines.push(`Tags: ${skill.tags.join(", ")}`);
  if (level.preconditions && skill.preconditions.length > 0) {
    lines.push("Preconditions:");
    for (const p of skill.preconditions) lines.push(`- ${p}`);
  }
  lines.push("Steps:");
  const shown = skill.steps.slice(0, level.maxSteps);
  shown.forEach((step, i) => {
    lines.push(`${i + 1}. ${clip(step, level.maxStepChars)}`);
  });
  if (shown.length < skill.steps.length)
    lines.push(`(${skill.steps.length - shown.length} more steps: skill_get ${skill.name})`);
  if (level.failureModes && skill.failureModes.length > 0) {
    lines.push("Failure modes:");
    for (const f of skill.failureModes) lines.push(`- ${f}`);
  }
  if (format === "injection") lines.push("</skill>");
  return lines.join("\n");
}

const INJECTION_HEAD =
  "<skills>\nProcedures that worked before for tasks like this one. Follow them when they fit; adapt when they do not.";
const INJECTION_TAIL = "</skills>";
const TRUNCATED = "\n…[truncated]";

function assemble(blocks: readonly string[], format: ContextFormat): string {
  if (format === "raw") return blocks.join("\n\n");
  return [INJECTION_HEAD, ...blocks, INJECTION_TAIL].join("\n");
}

/** The longest prefix of `body` that, with `suffix`, fits the budget (estimateTokens grows with length). */
function truncateToBudget(body: string, suffix: string, maxTokens: number): string {
  let lo = 0;
  let hi = body.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (estimateTokens(body.slice(0, mid) + suffix) <= maxTokens) lo = mid;
    else hi = mid - 1;
  }
  const text = body.slice(0, lo).trimEnd() + suffix;
  return estimateTokens(text) <= maxTokens ? text : "";
}

export interface RenderedContext {
  readonly text: string;
  /** Estimate of the uncompressed rendering of every requested skill. */
  readonly rawTokens: number;
  readonly finalTokens: number;
  readonly compressed: boolean;
  /** How many skills (from the front) the text still contains. */
  readonly includedCount: number;
}

/** Renders skills into one block that never exceeds `maxTokens`; earlier skills are kept longest. */
export function renderContext(
  skills: readonly SkillView[],
  format: ContextFormat,
  maxTokens: number,
): RenderedContext {
  if (skills.length === 0)
    return { text: "", rawTokens: 0, finalTokens: 0, compressed: false, includedCount: 0 };
  const full = assemble(
    skills.map((s) => renderSkill(s, LEVELS[0] as Level, format)),
    format,
  );
  const rawTokens = estimateTokens(full);
  const done = (text: string, includedCount: number, compressed: boolean): RenderedContext => ({
    text,
    rawTokens,
    finalTokens: estimateTokens(text),
    compressed,
    includedCount,
  });
  if (rawTokens <= maxTokens) return done(full, skills.length, false);
  for (const level of LEVELS.slice(1)) {
    const text = assemble(
      skills.map((s) => renderSkill(s, level, format)),
      format,
    );
    if (estimateTokens(text) <= maxTokens) return done(text, skills.length, true);
  }
  const tightest = LEVELS[LEVELS.length - 1] as Level;
  const blocks = skills.map((s) => renderSkill(s, tightest, format));
  for (let count = blocks.length - 1; count >= 1; count--) {
    const text = assemble(blocks.slice(0, count), format);
    if (estimateTokens(text) <= maxTokens) return done(text, count, true);
  }
  // One skill is still too large: cut it, keeping the closing tag of an injection block.
  const first = blocks[0] ?? "";
  const text =
    format === "raw"
      ? truncateToBudget(first, TRUNCATED, maxTokens)
      : truncateToBudget(
          `${INJECTION_HEAD}\n${first.replace(/\n<\/skill>$/, "")}`,
          `${TRUNCATED}\n</skill>\n${INJECTION_TAIL}`,
          maxTokens,
        );
  return done(text, text.length > 0 ? 1 : 0, true);
}
