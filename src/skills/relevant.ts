import type { Caller } from "../caller/caller.ts";
import { invalidArgument } from "../errors.ts";
import { checkSize, LIMITS, withinLimit, withinRange } from "../limits.ts";
import type { SkillContext } from "./context.ts";
import { rankSkills, readSkillSearch, type SkillSearch } from "./ranked.ts";
import type { BudgetReport } from "./read.ts";
import { renderContext } from "./render.ts";
import { type CallOptions, renderableInSteps, sanitizer } from "./sanitize.ts";
import type { SkillRow } from "./store.ts";

export interface GetRelevantSkillsInput {
  readonly task: string;
  readonly topK?: number;
  readonly maxTokens?: number;
  /** 0–1: skills scoring below it are left out; default 0. */
  readonly minScore?: number;
}

export interface GetRelevantSkillsResult extends BudgetReport {
  /** The skills in the injection block, best first. */
  readonly skills: readonly { readonly name: string; readonly title: string; readonly score: number }[];
}

/**
 * A GetRelevantSkills call checked and its task read once, as a full-text search over the skills of
 * every task type: its meaning and its ranking both consume it.
 */
export interface PreparedTask extends SkillSearch {
  readonly topK: number;
  readonly maxTokens: number;
  readonly minScore: number;
}

export function prepareTask(
  context: SkillContext,
  caller: Caller,
  input: GetRelevantSkillsInput,
): PreparedTask {
  const task = (input.task ?? "").trim();
  if (task.length === 0) throw invalidArgument("task must not be empty");
  checkSize(LIMITS.relevantSkillsTask, task.length);
  return {
    ...readSkillSearch(context, caller, { query: task, type: "fts", taskType: undefined }),
    topK: withinLimit(LIMITS.relevantSkillsTopK, input.topK),
    maxTokens: withinLimit(LIMITS.relevantSkillsMaxTokens, input.maxTokens),
    minScore: withinRange(LIMITS.relevantSkillsMinScore, input.minScore),
  };
}

/**
 * Pre-flight: the skills best matching a task, rendered as one injection block within the token
 * budget. A generator that yields between texts (SkillLibrary runs it in slices); only what a
 * rendering within the budget can show is read.
 */
export function* getRelevantSkillsInSteps(
  context: SkillContext,
  caller: Caller,
  task: PreparedTask,
  options: CallOptions = {},
): Generator<void, GetRelevantSkillsResult> {
  const { topK, maxTokens, minScore } = task;
  // Task text is paraphrase by nature: with semantic evidence, skills close in meaning join the words'.
  const { hits } = rankSkills(context, caller, task, topK, options);
  const rows =
    hits.length > 0
      ? context.store.visibleByName(
          caller,
          hits.map((h) => h.row.name),
        )
      : new Map<string, SkillRow>();
  const sanitize = sanitizer(options.toolGate, context.redaction);
  const ranked = hits.flatMap((hit) => {
    const row = rows.get(hit.row.name);
    return row && hit.hit.score >= minScore ? [{ row, score: hit.hit.score }] : [];
  });
  const views = yield* renderableInSteps(
    ranked.map(({ row }) => row),
    sanitize,
    maxTokens,
  );
  const rendered = renderContext(views, "injection", maxTokens);
  const included = ranked.slice(0, rendered.includedCount);
  context.markUsed(included.map(({ row }) => row.id));
  context.emit("skills_retrieved", caller, {
    skill_count: included.length,
    top_k: topK,
    raw_tokens_est: rendered.rawTokens,
    final_tokens_est: rendered.finalTokens,
    was_compressed: rendered.compressed,
    // One per skill retrieved, in order (attributes hold scalars: comma-separated).
    task_types: included.map(({ row }) => row.task_type).join(","),
  });
  return {
    skills: included.map(({ row, score }) => ({ name: row.name, title: sanitize(row)(row.title), score })),
    formattedContext: rendered.text,
    rawTokensEst: rendered.rawTokens,
    finalTokensEst: rendered.finalTokens,
    wasCompressed: rendered.compressed,
  };
}
