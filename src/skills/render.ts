import { estimateTokens } from "../text/tokens.ts";
import type { SkillContent } from "./model.ts";

/**
 * The text of a skill as a caller may see it (already redacted and tool-gated), or as much of it
 * as any rendering within a budget can show (renderableLists).
 */
export interface SkillView extends Omit<SkillContent, "extra"> {
  /** How many steps the skill has when `steps` holds only the first of them. */
  readonly stepCount?: number;
  /** Tokens of the list items left out of this view (estimated on their own); 0 or absent = none. */
  readonly omittedTokens?: number;
}

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
  const stepCount = skill.stepCount ?? skill.steps.length;
  if (shown.length < stepCount)
    lines.push(`(${stepCount - shown.length} more steps: skill_get ${skill.name})`);
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

/**
 * Whether `text` fits `maxTokens`. A text of more than four characters a token never does (the
 * estimate is at least characters / 4), so only a text that may fit is read.
 */
function fits(text: string, maxTokens: number): boolean {
  return text.length <= maxTokens * 4 && estimateTokens(text) <= maxTokens;
}

/** The longest prefix of `body` that, with `suffix`, fits the budget (estimateTokens grows with length). */
function truncateToBudget(body: string, suffix: string, maxTokens: number): string {
  let lo = 0;
  let hi = Math.min(body.length, maxTokens * 4);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(body.slice(0, mid) + suffix, maxTokens)) lo = mid;
    else hi = mid - 1;
  }
  const text = body.slice(0, lo).trimEnd() + suffix;
  return fits(text, maxTokens) ? text : "";
}

/** Steps the compressed levels show at most: a view keeps at least these (renderableLists). */
const MOST_STEPS_COMPRESSED = Math.max(...LEVELS.map((level) => level.maxSteps).filter(Number.isFinite));

/** A skill's lists as a view holds them: each item as the caller may see it, and what was left out. */
interface ViewLists {
  readonly steps: string[];
  readonly preconditions: string[];
  readonly failureModes: string[];
  stepCount: number;
  omittedTokens: number;
}

/**
 * The skills' lists (steps, preconditions, failure modes), each item made visible by `visible` (a
 * sanitizer: redaction and tool gating) only while a rendering within `maxTokens` could still show
 * it: once the items of one kind, over all skills in order, hold more characters than the budget
 * can, no rendering that shows that kind whole fits, so the rest are left out unread (counted, and
 * estimated from their raw text). Steps keep at least the first MOST_STEPS_COMPRESSED per skill,
 * which the tightest levels show, clipped. What renderContext makes of the views is what it would
 * make of the whole skills; only rawTokens is then an estimate of the parts. A generator that yields
 * after each item, so many long skills are made visible across turns of the event loop.
 */
export function* renderableLists(
  skills: readonly Pick<SkillContent, "steps" | "preconditions" | "failureModes">[],
  visible: (skill: number, text: string) => string,
  maxTokens: number,
): Generator<void, ViewLists[]> {
  const budget = maxTokens * 4;
  const views: ViewLists[] = skills.map((skill) => ({
    steps: [],
    preconditions: [],
    failureModes: [],
    stepCount: skill.steps.length,
    omittedTokens: 0,
  }));
  for (const kind of ["steps", "preconditions", "failureModes"] as const) {
    let held = 0;
    for (const [index, skill] of skills.entries()) {
      const view = views[index] as ViewLists;
      for (const [position, item] of skill[kind].entries()) {
        const needed = held <= budget || (kind === "steps" && position < MOST_STEPS_COMPRESSED);
        if (!needed) {
          view.omittedTokens += estimateTokens(item);
          continue;
        }
        const shown = visible(index, item);
        view[kind].push(shown);
        held += shown.length;
        yield;
      }
    }
  }
  return views;
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
  const omitted = skills.reduce((sum, skill) => sum + (skill.omittedTokens ?? 0), 0);
  const rawTokens = estimateTokens(full) + omitted;
  const done = (text: string, includedCount: number, compressed: boolean): RenderedContext => ({
    text,
    rawTokens,
    finalTokens: estimateTokens(text),
    compressed,
    includedCount,
  });
  if (omitted === 0 && fits(full, maxTokens)) return done(full, skills.length, false);
  for (const level of LEVELS.slice(1)) {
    const text = assemble(
      skills.map((s) => renderSkill(s, level, format)),
      format,
    );
    if (fits(text, maxTokens)) return done(text, skills.length, true);
  }
  const tightest = LEVELS[LEVELS.length - 1] as Level;
  const blocks = skills.map((s) => renderSkill(s, tightest, format));
  for (let count = blocks.length - 1; count >= 1; count--) {
    const text = assemble(blocks.slice(0, count), format);
    if (fits(text, maxTokens)) return done(text, count, true);
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
