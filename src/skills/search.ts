import type { Caller } from "../caller/caller.ts";
import { invalidArgument } from "../errors.ts";
import { checkSize, LIMITS, withinLimit, withinRange } from "../limits.ts";
import { ftsRank } from "../search/fts.ts";
import { RANKING_DEFAULTS } from "../search/ranker-options.ts";
import { type CallerRegex, compileCallerRegex, fold, mayMatch } from "../text/caller-regex.ts";
import {
  type MatchQuality,
  matchQuality,
  type QueryRewrite,
  REGEX_SCORE,
  SEMANTIC_OFF,
  type SemanticReport,
} from "../text/scores.ts";
import type { SkillContext } from "./context.ts";
import { SEARCH_TYPES, type SearchType, TASK_TYPES, type TaskType } from "./model.ts";
import { redactText } from "./redact.ts";
import { clip } from "./render.ts";
import { oneOf } from "./request.ts";
import { type CallOptions, type SanitizerFor, type SkillSummary, sanitizer, summary } from "./sanitize.ts";
import { type FusedRow, fuseSkills } from "./semantic.ts";
import { SEARCH_COLUMNS, type SearchRow, visibleFilter } from "./store.ts";
import { partitionKey } from "./word-index.ts";

/** Lexical hits fused with semantic and learned evidence (more than a page: a skill may rise into it). */
const SEMANTIC_DEPTH = 20;

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

/** The index partitions a caller may read: a narrowing pre-filter; the SQL predicate decides. */
function callerPartitions(caller: Caller): Set<string> {
  const partitions = new Set([partitionKey("global", "", "")]);
  if (caller.tenantId) {
    partitions.add(partitionKey("tenant", caller.tenantId, ""));
    if (caller.projectId) partitions.add(partitionKey("project", caller.tenantId, caller.projectId));
  }
  return partitions;
}

export function searchSkills(
  context: SkillContext,
  caller: Caller,
  input: SearchSkillsInput,
  options: CallOptions = {},
): SearchSkillsResult {
  const query = (input.query ?? "").trim();
  if (query.length === 0) throw invalidArgument("query must not be empty");
  checkSize(LIMITS.searchSkillsQuery, query.length);
  // One engine runs every type, so what ran is what was asked for.
  const type = oneOf("search type", input.type, SEARCH_TYPES) ?? "fts";
  const taskType = oneOf("task_type", input.taskType, TASK_TYPES);
  const limit = withinLimit(LIMITS.searchSkillsLimit, input.limit);
  const minScore = withinRange(LIMITS.searchSkillsMinScore, input.minScore);
  const sanitize = sanitizer(options.toolGate, context.redaction);

  let hits: FusedRow[];
  let widened = false;
  let rewrites: readonly QueryRewrite[] = [];
  let semantic: SemanticReport = SEMANTIC_OFF;
  if (type === "fts") {
    // With semantic evidence, more lexical hits than the page are fused: a skill may rise into it.
    const depth = options.semantic || options.learned ? Math.max(limit, SEMANTIC_DEPTH) : limit;
    const found = ftsSearch(context, caller, query, taskType, depth);
    const fused = fuseSkills(context, caller, taskType, found.hits, options.semantic, limit, options.learned);
    hits = fused.hits;
    semantic = fused.report;
    widened = found.widened;
    rewrites = found.rewrites;
  } else {
    const rows =
      type === "exact"
        ? exactSearch(context, caller, query, taskType, limit)
        : regexSearch(context, caller, compileCallerRegex(query), taskType, limit, sanitize);
    hits = fuseSkills(context, caller, taskType, rows, undefined, limit).hits;
  }
  const skills = hits
    .filter((hit) => hit.score >= minScore)
    .map((hit) => ({
      ...summary(hit.row, sanitize),
      score: hit.score,
      lexicalScore: hit.lexicalScore,
      semanticScore: hit.semanticScore,
      learnedScore: hit.learnedScore ?? 0,
      matchType: hit.learnedOnly ? ("learned" as const) : hit.semanticOnly ? ("semantic" as const) : type,
    }));
  context.emit("skill_search_query", caller, {
    query: clip(redactText(query), 200),
    search_type: type,
    effective_search_type: type,
    result_count: skills.length,
    widened,
    semantic_status: semantic.status,
    semantic_texts_pending: semantic.textsPending,
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

/**
 * Full-text ranking in the search core (src/search/fts.ts): the request read as tool search reads it
 * (typo repair, synonyms, several intents' words, AND → OR → fuzzy widening), over the caller's
 * partitions of the skills' word index, each hit confirmed by the SQL visibility predicate.
 */
export function ftsSearch(
  context: SkillContext,
  caller: Caller,
  query: string,
  taskType: TaskType | undefined,
  limit: number,
): { hits: ScoredRow[]; widened: boolean; rewrites: readonly QueryRewrite[] } {
  const index = context.searchIndex();
  const candidates = index.candidates(callerPartitions(caller), taskType);
  const where = visibleFilter(caller, undefined);
  const hits: ScoredRow[] = [];
  // The index already keeps to the caller's partitions, so the first `limit` docs almost always pass;
  // a skill shadowed by a nearer scope's does not, and then the search reads deeper.
  for (let depth = limit; ; depth *= 4) {
    const found = ftsRank(index, query, candidates, depth, RANKING_DEFAULTS.repeat, context.readings);
    const docs = found.docs.slice(0, depth);
    const rows =
      docs.length === 0
        ? []
        : context.store.all<SearchRow>(
            `SELECT ${SEARCH_COLUMNS} FROM skills s NOT INDEXED WHERE s.seq IN (${docs.map(() => "?").join(",")}) AND ${where.sql}`,
            [...docs.map((d) => index.seqOf(d.doc)), ...where.params],
          );
    const bySeq = new Map(rows.map((row) => [row.seq, row]));
    hits.length = 0;
    for (const d of docs) {
      const row = bySeq.get(index.seqOf(d.doc));
      if (row && hits.length < limit) hits.push({ row, score: d.score });
    }
    // Fewer docs than asked for means there are no more.
    if (hits.length >= limit || docs.length < depth)
      return { hits, widened: found.strategy !== "and", rewrites: found.rewrites };
  }
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
  // visible skill instead (8 ms at 50,000).
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
