import type { Caller } from "../caller/caller.ts";
import { invalidArgument } from "../errors.ts";
import { checkSize, LIMITS, withinLimit, withinRange } from "../limits.ts";
import {
  type MatchQuality,
  matchQuality,
  type QueryRewrite,
  REGEX_SCORE,
  SEMANTIC_OFF,
  type SemanticReport,
} from "../search/scores.ts";
import { type CallerRegex, compileCallerRegex, fold, mayMatch } from "../text/caller-regex.ts";
import type { SkillContext } from "./context.ts";
import { SEARCH_TYPES, type SearchType, TASK_TYPES, type TaskType } from "./model.ts";
import { callerPartitions, rankSkills } from "./ranked.ts";
import { redactText } from "./redact.ts";
import { clip } from "./render.ts";
import { oneOf } from "./request.ts";
import { type CallOptions, type SanitizerFor, type SkillSummary, sanitizer, summary } from "./sanitize.ts";
import { SEARCH_COLUMNS, type SearchRow, visibleFilter } from "./store.ts";

/** Rows a regex search may run RE2 on after the literal pre-check (~10 µs each). */
const MAX_REGEX_ROWS = 5_000;
/**
 * Characters of skill text one regex search may run RE2 on, counted before any runs (RE2 and the
 * scan around it: tens of ns a character). Rows alone do not bound the work: 5,000 skills of 12 KB
 * took seconds with a pattern that has no literal to pre-check.
 */
const MAX_REGEX_TEXT = 500_000;

const regexTooBroad = (what: string) =>
  invalidArgument(
    `regex matches too broadly: ${what} would need a full scan; ` +
      "add literal text to the pattern, filter by task_type, or use full-text search",
  );

interface SkillSearchHit extends SkillSummary {
  /** The final score in [0, 1]: lexical, or lexical fused with semantic. */
  readonly score: number;
  readonly lexicalScore: number;
  /** 0 when semantic ranking did not take part for this skill. */
  readonly semanticScore: number;
  /** What the caller's tenant learned of it for this query, in [-1, 1]; 0 = nothing. */
  readonly learnedScore: number;
  /** The search type that found it, or "semantic" when only its meaning matched, "learned" when only learning. */
  readonly matchType: SearchType | "semantic" | "learned";
}

export interface SearchSkillsInput {
  readonly query: string;
  readonly type?: SearchType;
  readonly taskType?: TaskType;
  readonly limit?: number;
  /** 0–1: hits scoring below it are dropped; default 0 (keep every hit). */
  readonly minScore?: number;
}

export interface SearchSkillsResult {
  readonly skills: readonly SkillSearchHit[];
  /** What ran: the requested type (`fts` by default). */
  readonly effectiveSearchType: SearchType;
  /** The FTS query was widened (AND → OR → fuzzy) because the stricter form found too little. */
  readonly widened: boolean;
  readonly matchQuality: MatchQuality;
  /** Typo repairs and synonyms added to the query. */
  readonly rewrites: readonly QueryRewrite[];
  readonly semantic: SemanticReport;
}

/** A visible skill and its score in [0, 1]. */
interface ScoredRow {
  readonly row: SearchRow;
  readonly score: number;
}

/** A visible skill with the parts of its score, as any search type found it. */
interface ScoredSkill extends ScoredRow {
  readonly lexicalScore: number;
  readonly semanticScore: number;
  readonly learnedScore: number;
  readonly matchType: SkillSearchHit["matchType"];
}

/** The query, type and task type of a search, checked: what the search and its meaning text read. */
export function searchOf(input: SearchSkillsInput): {
  query: string;
  type: SearchType;
  taskType: TaskType | undefined;
} {
  const query = (input.query ?? "").trim();
  if (query.length === 0) throw invalidArgument("query must not be empty");
  checkSize(LIMITS.searchSkillsQuery, query.length);
  // One engine runs every type, so what ran is what was asked for.
  const type = oneOf("search type", input.type, SEARCH_TYPES) ?? "fts";
  return { query, type, taskType: oneOf("task_type", input.taskType, TASK_TYPES) };
}

export function searchSkills(
  context: SkillContext,
  caller: Caller,
  input: SearchSkillsInput,
  options: CallOptions = {},
): SearchSkillsResult {
  const { query, type, taskType } = searchOf(input);
  const limit = withinLimit(LIMITS.searchSkillsLimit, input.limit);
  const minScore = withinRange(LIMITS.searchSkillsMinScore, input.minScore);
  const sanitize = sanitizer(options.toolGate, context.redaction);

  let hits: readonly ScoredSkill[];
  let widened = false;
  let rewrites: readonly QueryRewrite[] = [];
  let semantic: SemanticReport = SEMANTIC_OFF;
  if (type === "fts") {
    const ranked = rankSkills(context, caller, query, taskType, limit, options);
    hits = ranked.hits.map(({ row, hit }) => ({ row, ...hit }));
    semantic = ranked.semantic;
    widened = ranked.widened;
    rewrites = ranked.rewrites;
  } else {
    const rows =
      type === "exact"
        ? exactSearch(context, caller, query, taskType, limit)
        : regexSearch(context, caller, compileCallerRegex(query), taskType, limit, sanitize);
    hits = rows.map(({ row, score }) => ({
      row,
      score,
      lexicalScore: score,
      semanticScore: 0,
      learnedScore: 0,
      matchType: type,
    }));
  }
  const skills = hits
    .filter((hit) => hit.score >= minScore)
    .map((hit) => ({
      ...summary(hit.row, sanitize),
      score: hit.score,
      lexicalScore: hit.lexicalScore,
      semanticScore: hit.semanticScore,
      learnedScore: hit.learnedScore,
      matchType: hit.matchType,
    }));
  context.emit("skill_search_query", caller, {
    query: clip(redactText(query), 200),
    search_type: type,
    effective_search_type: type,
    result_count: skills.length,
    widened,
    semantic_status: semantic.status,
    semantic_texts_pending: semantic.textsPending,
    semantic_tier: semantic.tier,
  });
  return {
    skills,
    effectiveSearchType: type,
    widened,
    matchQuality: matchQuality(skills, context.goodMatchScore),
    rewrites,
    semantic,
  };
}

/** Full name or bare last segment, case-insensitive; both lookups are index seeks. */
function exactSearch(
  context: SkillContext,
  caller: Caller,
  query: string,
  taskType: TaskType | undefined,
  limit: number,
): ScoredRow[] {
  const where = visibleFilter(caller, taskType);
  const rows = context.store.all<SearchRow>(
    `SELECT ${SEARCH_COLUMNS} FROM skills s NOT INDEXED
     WHERE s.seq IN (SELECT seq FROM skills WHERE name = ? COLLATE NOCASE
                     UNION SELECT seq FROM skills WHERE name_tail = ? COLLATE NOCASE) AND ${where.sql}
     ORDER BY lower(s.name) = lower(?) DESC, length(s.name), s.name LIMIT ?`,
    [query, query, ...where.params, query, limit],
  );
  return rows.map((row) => ({ row, score: 1 }));
}

/**
 * Linear-time (RE2) scan of the visible skills. Text fields are matched as the caller would see them
 * (redacted, tool-gated), so a pattern cannot probe for hidden tool names or redacted secrets.
 */
function regexSearch(
  context: SkillContext,
  caller: Caller,
  regex: CallerRegex,
  taskType: TaskType | undefined,
  limit: number,
  sanitize: SanitizerFor,
): ScoredRow[] {
  const where = visibleFilter(caller, taskType);
  const hits: ScoredRow[] = [];
  // The index's literal pre-check picks the rows worth RE2; a pattern that leaves too many, or too
  // much of their text, is refused before RE2 runs, so one caller cannot stall the server.
  const seqs = context.searchIndex().regexCandidates(regex, callerPartitions(caller), taskType, {
    rows: MAX_REGEX_ROWS,
    text: MAX_REGEX_TEXT,
  });
  if (seqs === "rows") throw regexTooBroad(`more than ${MAX_REGEX_ROWS} skills`);
  if (seqs === "text") throw regexTooBroad(`more than ${MAX_REGEX_TEXT} characters of skill text`);
  // NOT INDEXED: look the candidates up by rowid; with the scope index SQLite would walk every
  // visible skill instead, which grows with the library.
  const statement = context.store.prepare(
    `SELECT ${SEARCH_COLUMNS} FROM skills s NOT INDEXED WHERE s.seq IN (SELECT value FROM json_each(?)) AND ${where.sql}`,
  );
  const params = [JSON.stringify(seqs), ...where.params];
  const re = regex.full;
  for (const raw of statement.iterate(...params)) {
    const row = raw as SearchRow;
    let score = 0;
    if (mayMatch(regex, fold(row.name)) && re.test(row.name))
      score = re.testExact(row.name)
        ? REGEX_SCORE.fullName
        : re.matcher(row.name).lookingAt()
          ? REGEX_SCORE.namePrefix
          : REGEX_SCORE.nameSubstring;
    else {
      const tags = (JSON.parse(row.tags) as string[]).join(" ");
      const text = `${row.title}\n${row.trigger_text}\n${row.description}\n${tags}`;
      // Literal pre-check (no RE2 work for most rows), then RE2 on the raw text, then a confirmation
      // on what the caller may actually see.
      if (mayMatch(regex, fold(text)) && re.test(text) && re.test(sanitize(row)(text)))
        score = REGEX_SCORE.text;
    }
    if (score > 0) hits.push({ row, score });
  }
  hits.sort(
    (a, b) =>
      b.score - a.score || a.row.name.length - b.row.name.length || (a.row.name < b.row.name ? -1 : 1),
  );
  return hits.slice(0, limit);
}
