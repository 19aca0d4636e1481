import type { Caller } from "../caller/caller.ts";
import { invalidArgument, notFound, quoteInput } from "../errors.ts";
import type { EventAttributeValue, EventSink, EventType } from "../events/event.ts";
import { checkSize, LIMITS, withinLimit } from "../limits.ts";
import type { Db } from "../store/database.ts";
import { writeTransaction } from "../store/transaction.ts";
import { type CallerRegex, compileCallerRegex, fold, mayMatch } from "../text/caller-regex.ts";
import { minMaxScale, REGEX_SCORE } from "../text/scores.ts";
import { estimateTokens } from "../text/tokens.ts";
import { toolGateRewriter } from "./gate.ts";
import { type IndexHit, MemoryIndex, partitionKey } from "./memindex.ts";
import {
  SCOPE_KINDS,
  type ScopeKind,
  SEARCH_TYPES,
  type SearchType,
  SKILL_ORIGINS,
  type Skill,
  type SkillOrigin,
  type SkillScope,
  TASK_TYPES,
  type TaskType,
  type TextAuthor,
  type ToolGate,
} from "./model.ts";
import {
  DEFAULT_PACK_LIMITS,
  formatProblem,
  PACK_NAME,
  type PackFile,
  type PackLimits,
  type PackProblem,
  packFingerprint,
  parsePack,
  readInlineFiles,
  readPackFolder,
  resolvePackDir,
} from "./pack.ts";
import { redactText } from "./redact.ts";
import { type ContextFormat, renderContext, type SkillView } from "./render.ts";
import { rowToSkill, type SkillRow, SkillStore, type SqlPart, visibleSkillPredicate } from "./store.ts";

/** Rows a regex search may run RE2 on after the literal pre-check (~10 µs each). */
const MAX_REGEX_ROWS = 5_000;
/**
 * Characters of skill text one regex search may run RE2 on (~130 ms on a loaded 2-core host). Rows alone do not bound
 * the work: 5,000 skills of 12 KB took seconds with a pattern that has no literal to pre-check.
 */
const MAX_REGEX_TEXT = 2_000_000;

const regexTooBroad = (what: string) =>
  invalidArgument(
    `regex matches too broadly: ${what} would need a full scan; ` +
      "add literal text to the pattern, filter by task_type, or use full-text search",
  );

/** The index partitions a caller may read: a narrowing pre-filter; the SQL predicate decides. */
function callerPartitions(caller: Caller): Set<string> {
  const partitions = new Set([partitionKey("global", "", "")]);
  if (caller.tenantId) {
    partitions.add(partitionKey("tenant", caller.tenantId, ""));
    if (caller.projectId) partitions.add(partitionKey("project", caller.tenantId, caller.projectId));
  }
  return partitions;
}

export interface SkillServiceOptions {
  readonly db: Db;
  readonly events?: EventSink;
  /** Redact e-mails, phone numbers, tokens and URL query strings from returned text (default true). */
  readonly redaction?: boolean;
  /** Shown first by renderSkillDirectory (config `pinned_skill_names`). */
  readonly pinnedSkillNames?: readonly string[];
  /** Server-side pack folders must lie inside one of these (relative pack paths resolve against the first). */
  readonly packRoots?: readonly string[];
  readonly packLimits?: Partial<PackLimits>;
  readonly now?: () => number;
}

/** Per-call options that depend on the caller's tool visibility. */
export interface CallOptions {
  readonly toolGate?: ToolGate;
}

export interface LoadProgress {
  readonly phase: "read" | "parse" | "write";
  readonly done: number;
  readonly total: number;
}

export interface LoadSkillPackInput {
  /** Pack name: lowercase letters, digits, '-' and '_'. Default skill names are `pack.<pack>.<slug>`. */
  readonly pack: string;
  readonly version?: string;
  /** A server-side folder (inside the configured pack roots)… */
  readonly path?: string;
  /** …or inline files. Exactly one of the two. */
  readonly files?: readonly PackFile[];
  readonly scope: SkillScope;
  /** Update pack skills whose content changed and remove those the pack no longer has (default true). */
  readonly updateExistingPackSkills?: boolean;
  readonly onProgress?: (progress: LoadProgress) => void;
}

export interface LoadSkillPackResult {
  readonly pack: string;
  /** Skills in the pack. */
  readonly skillCount: number;
  /** Newly inserted. */
  readonly loaded: number;
  readonly updated: number;
  readonly unchanged: number;
  /** Pack skills of an earlier version that this version no longer has. */
  readonly removed: number;
  /** Changed skills left as they were because updateExistingPackSkills was false. */
  readonly notUpdated: number;
  /** Names held by learned skills, which packs never overwrite. */
  readonly skippedLearned: readonly string[];
}

export interface SkillSummary {
  readonly name: string;
  readonly title: string;
  readonly trigger: string;
  readonly taskType: TaskType;
  readonly tags: readonly string[];
}

export interface SkillSearchHit extends SkillSummary {
  readonly score: number;
  readonly matchType: SearchType;
}

export interface SearchSkillsInput {
  readonly query: string;
  readonly type?: SearchType;
  readonly taskType?: TaskType;
  readonly limit?: number;
}

export interface SearchSkillsResult {
  readonly skills: readonly SkillSearchHit[];
  /** What ran: the requested type (`fts` by default). */
  readonly effectiveSearchType: SearchType;
  /** The FTS query was widened (AND → OR → prefix) because the stricter form found nothing. */
  readonly widened: boolean;
}

/** A skill as returned to a caller: redacted, tool-gated, without other tenants' identifiers. */
export interface SkillDetails extends SkillView {
  readonly id: string;
  readonly origin: SkillOrigin;
  readonly originRef: string;
  readonly contentHash: string;
  readonly scope: ScopeKind;
  readonly extra: Readonly<Record<string, unknown>>;
  readonly stats: Skill["stats"];
}

export interface GetSkillsInput {
  readonly names: readonly string[];
  readonly format?: ContextFormat;
  readonly maxTokens?: number;
}

export interface BudgetReport {
  readonly formattedContext: string;
  readonly rawTokensEst: number;
  readonly finalTokensEst: number;
  readonly wasCompressed: boolean;
}

export interface GetSkillsResult extends BudgetReport {
  readonly skills: readonly SkillDetails[];
  /** Requested names the caller has no skill for (missing and invisible look the same). */
  readonly notFound: readonly string[];
}

export interface ListSkillsInput {
  readonly pageSize?: number;
  readonly pageToken?: string;
  readonly taskType?: TaskType;
  readonly origin?: SkillOrigin;
  readonly scope?: ScopeKind;
}

export interface ListedSkill extends SkillSummary {
  readonly origin: SkillOrigin;
  readonly scope: ScopeKind;
  readonly useCount: number;
  readonly lastUsedAtMs: number | null;
}

export interface ListSkillsResult {
  readonly skills: readonly ListedSkill[];
  /** Empty when this is the last page. */
  readonly nextPageToken: string;
  readonly totalCount: number;
}

export interface GetRelevantSkillsInput {
  readonly task: string;
  readonly topK?: number;
  readonly maxTokens?: number;
}

export interface GetRelevantSkillsResult extends BudgetReport {
  /** The skills in the injection block, best first. */
  readonly skills: readonly { readonly name: string; readonly title: string; readonly score: number }[];
}

export const DIRECTORY_FIELDS = ["name", "title", "trigger", "description", "task_type", "tags"] as const;
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

// ---------------------------------------------------------------------------------------------------

function oneOf<T extends string>(
  field: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined || value === "") return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw invalidArgument(`${field} must be one of ${allowed.join(", ")}, got ${quoteInput(value)}`);
  return value as T;
}

const STOPWORDS = new Set(
  "a an and are as at be by can do does for from get got has have how i if in into is it its me my need of on or our please should so that the then this to up use using want we what when where which who why will with you your".split(
    " ",
  ),
);

function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;
}

function encodePageToken(name: string, seq: number): string {
  return Buffer.from(JSON.stringify({ n: name, s: seq })).toString("base64url");
}

function decodePageToken(token: string): { n: string; s: number } {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (
      typeof value === "object" &&
      value !== null &&
      "n" in value &&
      "s" in value &&
      typeof value.n === "string" &&
      typeof value.s === "number"
    )
      return { n: value.n, s: value.s };
  } catch {
    // fall through to the error below
  }
  throw invalidArgument("page_token is invalid: pass the next_page_token of the previous response");
}

type Sanitize = (text: string) => string;
/** The sanitizer for a skill's text, which depends on who may have written it (its scope). */
type SanitizerFor = (row: { scope_kind: ScopeKind }) => Sanitize;

interface SearchRow {
  seq: number;
  name: string;
  title: string;
  trigger_text: string;
  description: string;
  task_type: TaskType;
  tags: string;
  scope_kind: ScopeKind;
}

const SEARCH_COLUMNS =
  "s.seq, s.name, s.title, s.trigger_text, s.description, s.task_type, s.tags, s.scope_kind";

// ---------------------------------------------------------------------------------------------------

/** The Skills domain: pack loading, scoped search/get/list, pre-flight injection and the directory. */
export class SkillService {
  private readonly store: SkillStore;
  private readonly events: EventSink | undefined;
  private readonly redaction: boolean;
  private readonly pinned: readonly string[];
  private readonly packRoots: readonly string[];
  private readonly limits: PackLimits;
  private readonly now: () => number;
  private index: MemoryIndex | undefined;
  private indexDataVersion = -1;

  constructor(options: SkillServiceOptions) {
    this.store = new SkillStore(options.db);
    this.events = options.events;
    this.redaction = options.redaction ?? true;
    this.pinned = options.pinnedSkillNames ?? [];
    this.packRoots = options.packRoots ?? [process.cwd()];
    this.limits = { ...DEFAULT_PACK_LIMITS, ...options.packLimits };
    this.now = options.now ?? Date.now;
  }

  /** Call after writing to the skills table through another module on the same connection. */
  invalidateSearchIndex(): void {
    this.index = undefined;
  }

  /** The in-memory index, rebuilt when this service or another connection changed the database. */
  private memoryIndex(): MemoryIndex {
    // A cached statement: db.pragma() prepares anew on every call, a measurable cost per search.
    const dataVersion =
      this.store.get<{ data_version: number }>("PRAGMA data_version", [])?.data_version ?? -1;
    if (!this.index || dataVersion !== this.indexDataVersion) {
      this.index = MemoryIndex.build(this.store.db);
      this.indexDataVersion = dataVersion;
    }
    return this.index;
  }

  // -- loading --------------------------------------------------------------------------------------

  loadSkillPack(input: LoadSkillPackInput, caller?: Caller): LoadSkillPackResult {
    checkSize(LIMITS.packName, input.pack.length);
    if (!PACK_NAME.test(input.pack))
      throw invalidArgument(
        `pack_name ${quoteInput(input.pack)} must use lowercase letters, digits, '-' and '_', starting with a letter or digit`,
      );
    const scope = this.checkScope(input.scope);
    if ((input.path === undefined) === (input.files === undefined))
      throw invalidArgument("pass exactly one of path (a server-side folder) or files (inline)");
    const progress = input.onProgress;
    const problems: PackProblem[] = [];
    let files: PackFile[];
    if (input.path !== undefined) {
      const resolved = resolvePackDir(input.path, this.packRoots);
      if (!resolved.dir)
        throw invalidArgument(`skill pack ${quoteInput(input.pack)} rejected: ${resolved.error}`);
      files = readPackFolder(resolved.dir, this.limits, problems);
    } else {
      checkSize(LIMITS.inlinePackFiles, input.files?.length ?? 0);
      files = readInlineFiles(input.files ?? [], this.limits, problems);
    }
    progress?.({ phase: "read", done: files.length, total: files.length });
    const version = input.version ?? "";
    const previous = this.store.packRecord(input.pack, scope);
    if (
      problems.length === 0 &&
      previous?.version === version &&
      previous.fingerprint === packFingerprint(files)
    ) {
      // Byte-identical to the last complete load: nothing to parse, nothing to write.
      const total = previous.skill_count;
      const same: LoadSkillPackResult = {
        pack: input.pack,
        skillCount: total,
        loaded: 0,
        updated: 0,
        unchanged: total,
        removed: 0,
        notUpdated: 0,
        skippedLearned: [],
      };
      // Nothing was written, so nothing to commit it with: batched like any report of a read.
      this.emitPackLoaded(same, caller, scope);
      return same;
    }
    const parsed = parsePack(input.pack, files, this.limits, problems, (done, total) =>
      progress?.({ phase: "parse", done, total }),
    );
    if (problems.length > 0) {
      throw invalidArgument(
        `skill pack ${quoteInput(input.pack)} rejected with ${problems.length} problem${problems.length === 1 ? "" : "s"}; nothing was loaded: ${formatProblem(problems[0] as PackProblem)}${problems.length > 1 ? " (see details for all)" : ""}`,
        problems.map(formatProblem),
      );
    }
    const update = input.updateExistingPackSkills ?? true;
    const originRef = version ? `${input.pack}@${version}` : input.pack;
    const total = parsed.skills.length;
    return writeTransaction(this.store.db, () => {
      const now = this.now();
      const existing = this.store.existingInScope(scope);
      let loaded = 0;
      let updated = 0;
      let unchanged = 0;
      let notUpdated = 0;
      let removed = 0;
      const skippedLearned: string[] = [];
      const names = new Set<string>();
      parsed.skills.forEach((skill, i) => {
        names.add(skill.content.name);
        const old = existing.get(skill.content.name);
        if (!old) {
          this.store.insert(skill, scope, input.pack, originRef, now);
          loaded++;
        } else if (old.origin === "learned") skippedLearned.push(skill.content.name);
        else if (old.content_hash === skill.contentHash) unchanged++;
        else if (update) {
          this.store.update(old.seq, skill, input.pack, originRef, now);
          updated++;
        } else notUpdated++;
        if (progress && (i % 500 === 499 || i === total - 1))
          progress({ phase: "write", done: i + 1, total });
      });
      if (update) {
        for (const [name, old] of existing) {
          if (old.origin === "pack" && old.pack_name === input.pack && !names.has(name)) {
            this.store.remove(old.seq);
            removed++;
          }
        }
      }
      // A partial application must not make the next load look like a no-op.
      const fingerprint = notUpdated === 0 && skippedLearned.length === 0 ? parsed.fingerprint : "";
      this.store.recordPack(input.pack, scope, version, fingerprint, total, now);
      this.invalidateSearchIndex();
      const result: LoadSkillPackResult = {
        pack: input.pack,
        skillCount: total,
        loaded,
        updated,
        unchanged,
        removed,
        notUpdated,
        skippedLearned,
      };
      // In the load's transaction: a crash keeps both or neither.
      this.emitPackLoaded(result, caller, scope);
      return result;
    });
  }

  private emitPackLoaded(result: LoadSkillPackResult, caller: Caller | undefined, scope: SkillScope): void {
    this.emit(
      "skill_pack_loaded",
      caller,
      {
        pack: result.pack,
        skill_count: result.skillCount,
        loaded_count: result.loaded,
        updated_count: result.updated,
        unchanged_count: result.unchanged,
        removed_count: result.removed,
      },
      scope.tenantId,
    );
  }

  // -- search ---------------------------------------------------------------------------------------

  searchSkills(caller: Caller, input: SearchSkillsInput, options: CallOptions = {}): SearchSkillsResult {
    const query = (input.query ?? "").trim();
    if (query.length === 0) throw invalidArgument("query must not be empty");
    checkSize(LIMITS.searchSkillsQuery, query.length);
    const type = oneOf("search type", input.type, SEARCH_TYPES) ?? "fts";
    const taskType = oneOf("task_type", input.taskType, TASK_TYPES);
    const limit = withinLimit(LIMITS.searchSkillsLimit, input.limit);
    const sanitize = this.sanitizer(options.toolGate);

    let hits: { row: SearchRow; score: number }[];
    let widened = false;
    if (type === "exact") hits = this.exactSearch(caller, query, taskType, limit);
    else if (type === "regex")
      hits = this.regexSearch(caller, compileCallerRegex(query), taskType, limit, sanitize);
    else {
      const found = this.ftsSearch(caller, words(query).slice(0, 16), taskType, limit, "and");
      hits = found.hits;
      widened = found.widened;
    }
    const skills = hits.map(({ row, score }) => ({
      ...this.summary(row, sanitize),
      score,
      matchType: type,
    }));
    this.emit("skill_search_query", caller, {
      query: clip(redactText(query), 200),
      search_type: type,
      effective_search_type: type,
      result_count: skills.length,
      widened,
    });
    return { skills, effectiveSearchType: type, widened };
  }

  private filters(caller: Caller, taskType: TaskType | undefined): SqlPart {
    const visible = visibleSkillPredicate("s", caller);
    if (!taskType) return visible;
    return { sql: `${visible.sql} AND s.task_type = ?`, params: [...visible.params, taskType] };
  }

  /** Full-text ranking; widens AND → OR → prefix when the stricter query finds nothing. */
  private ftsSearch(
    caller: Caller,
    terms: readonly string[],
    taskType: TaskType | undefined,
    limit: number,
    start: "and" | "or",
  ): { hits: { row: SearchRow; score: number }[]; widened: boolean } {
    if (terms.length === 0) return { hits: [], widened: false };
    const index = this.memoryIndex();
    const partitions = callerPartitions(caller);
    const modes: ("and" | "or" | "prefix")[] =
      start === "and" && terms.length > 1 ? ["and", "or", "prefix"] : ["or", "prefix"];
    for (const [i, mode] of modes.entries()) {
      const queryTerms =
        mode === "prefix"
          ? terms.map((t) => (t.length > 4 ? t.slice(0, Math.max(4, t.length - 2)) : t))
          : terms;
      const verified = this.verifyVisible(caller, limit, (k) =>
        index.search(queryTerms, mode, partitions, taskType, k),
      );
      if (verified.length === 0) continue;
      const scores = minMaxScale(verified.map((v) => v.relevance));
      return { hits: verified.map((v, j) => ({ row: v.row, score: scores[j] ?? 0.5 })), widened: i > 0 };
    }
    return { hits: [], widened: modes.length > 1 };
  }

  /** Keeps the best `limit` candidates that pass the visibility predicate, in rank order. */
  private verifyVisible(
    caller: Caller,
    limit: number,
    topK: (k: number) => IndexHit[],
  ): { row: SearchRow; relevance: number }[] {
    const where = this.filters(caller, undefined);
    const out: { row: SearchRow; relevance: number }[] = [];
    let checked = 0;
    // The index already filters by scope partition, so the first `limit` candidates almost always pass.
    for (let k = limit; ; k *= 4) {
      const ranked = topK(k);
      const chunk = ranked.slice(checked);
      checked = ranked.length;
      if (chunk.length > 0) {
        const rows = this.store.all<SearchRow>(
          `SELECT ${SEARCH_COLUMNS} FROM skills s NOT INDEXED WHERE s.seq IN (${chunk.map(() => "?").join(",")}) AND ${where.sql}`,
          [...chunk.map((c) => c.seq), ...where.params],
        );
        const bySeq = new Map(rows.map((row) => [row.seq, row]));
        for (const hit of chunk) {
          const row = bySeq.get(hit.seq);
          if (row && out.length < limit) out.push({ row, relevance: hit.relevance });
        }
      }
      // Fewer than k candidates means there are no more; otherwise shadowed ones were dropped: widen.
      if (out.length >= limit || ranked.length < k) return out;
    }
  }

  /** Full name or bare last segment, case-insensitive; both lookups are index seeks. */
  private exactSearch(caller: Caller, query: string, taskType: TaskType | undefined, limit: number) {
    const where = this.filters(caller, taskType);
    const rows = this.store.all<SearchRow>(
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
  private regexSearch(
    caller: Caller,
    regex: CallerRegex,
    taskType: TaskType | undefined,
    limit: number,
    sanitize: SanitizerFor,
  ): { row: SearchRow; score: number }[] {
    const where = this.filters(caller, taskType);
    const hits: { row: SearchRow; score: number }[] = [];
    // The index's literal pre-check picks the rows worth RE2; a pattern that leaves too many is
    // refused rather than scanned, so one caller cannot stall the server.
    const seqs = this.memoryIndex().regexCandidates(
      regex,
      callerPartitions(caller),
      taskType,
      MAX_REGEX_ROWS,
    );
    if (seqs === undefined) throw regexTooBroad(`more than ${MAX_REGEX_ROWS} skills`);
    // NOT INDEXED: look the candidates up by rowid; with the scope index SQLite would walk every
    // visible skill instead (8 ms at 50,000).
    const statement = this.store.prepare(
      `SELECT ${SEARCH_COLUMNS} FROM skills s NOT INDEXED WHERE s.seq IN (SELECT value FROM json_each(?)) AND ${where.sql}`,
    );
    const params = [JSON.stringify(seqs), ...where.params];
    const re = regex.full;
    let budget = MAX_REGEX_TEXT;
    const test = (text: string) => {
      budget -= text.length;
      if (budget < 0) throw regexTooBroad(`more than ${MAX_REGEX_TEXT} characters of skill text`);
      return re.test(text);
    };
    for (const raw of statement.iterate(...params)) {
      const row = raw as SearchRow;
      let score = 0;
      if (mayMatch(regex, fold(row.name)) && test(row.name))
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
        if (mayMatch(regex, fold(text)) && test(text) && test(sanitize(row)(text))) score = REGEX_SCORE.text;
      }
      if (score > 0) hits.push({ row, score });
    }
    hits.sort(
      (a, b) =>
        b.score - a.score || a.row.name.length - b.row.name.length || (a.row.name < b.row.name ? -1 : 1),
    );
    return hits.slice(0, limit);
  }

  // -- get ------------------------------------------------------------------------------------------

  getSkills(caller: Caller, input: GetSkillsInput, options: CallOptions = {}): GetSkillsResult {
    const names = [...new Set(input.names ?? [])];
    checkSize(LIMITS.getSkillsNames, names.length);
    for (const name of names) checkSize(LIMITS.getSkillsName, name.length);
    const format = oneOf("format", input.format, ["raw", "injection"] as const) ?? "raw";
    const maxTokens = withinLimit(LIMITS.getSkillsMaxTokens, input.maxTokens);
    const rows = this.rowsByName(caller, names);
    const missing = names.filter((name) => !rows.has(name));
    if (missing.length === names.length)
      throw notFound(
        names.length === 1
          ? `skill ${JSON.stringify(names[0])} not found; use skill_search to find skills`
          : `none of the requested skills were found: ${names.map((n) => JSON.stringify(n)).join(", ")}; use skill_search to find skills`,
      );
    const sanitize = this.sanitizer(options.toolGate);
    const skills = names.flatMap((name) => {
      const row = rows.get(name);
      return row ? [this.details(row, sanitize)] : [];
    });
    const context = renderContext(skills, format, maxTokens);
    this.store.markUsed(
      skills.map((s) => rows.get(s.name)?.seq ?? -1),
      this.now(),
    );
    this.emit("skill_get", caller, {
      requested_count: names.length,
      found_count: skills.length,
      format,
      raw_tokens_est: context.rawTokens,
      final_tokens_est: context.finalTokens,
      was_compressed: context.compressed,
    });
    return {
      skills,
      notFound: missing,
      formattedContext: context.text,
      rawTokensEst: context.rawTokens,
      finalTokensEst: context.finalTokens,
      wasCompressed: context.compressed,
    };
  }

  private rowsByName(caller: Caller, names: readonly string[]): Map<string, SkillRow> {
    const where = this.filters(caller, undefined);
    const rows = this.store.all<SkillRow>(
      `SELECT s.* FROM skills s INDEXED BY skills_name WHERE s.name IN (${names.map(() => "?").join(",")}) AND ${where.sql}`,
      [...names, ...where.params],
    );
    return new Map(rows.map((row) => [row.name, row]));
  }

  // -- list -----------------------------------------------------------------------------------------

  listSkills(caller: Caller, input: ListSkillsInput = {}, options: CallOptions = {}): ListSkillsResult {
    const pageSize = withinLimit(LIMITS.listSkillsPageSize, input.pageSize);
    const taskType = oneOf("task_type", input.taskType, TASK_TYPES);
    const origin = oneOf("origin", input.origin, SKILL_ORIGINS);
    const scope = oneOf("scope", input.scope, SCOPE_KINDS);
    const after = input.pageToken ? decodePageToken(input.pageToken) : undefined;
    const where = this.filters(caller, taskType);
    const conditions = [where.sql];
    const params: (string | number)[] = [...where.params];
    if (origin) {
      conditions.push("s.origin = ?");
      params.push(origin);
    }
    if (scope) {
      conditions.push("s.scope_kind = ?");
      params.push(scope);
    }
    const filtered = conditions.join(" AND ");
    const totalCount =
      this.store.get<{ n: number }>(`SELECT count(*) AS n FROM skills s WHERE ${filtered}`, params)?.n ?? 0;
    const pageParams = [...params];
    let pageWhere = filtered;
    if (after) {
      pageWhere += " AND (s.name > ? OR (s.name = ? AND s.seq > ?))";
      pageParams.push(after.n, after.n, after.s);
    }
    const rows = this.store.all<SkillRow>(
      `SELECT s.* FROM skills s WHERE ${pageWhere} ORDER BY s.name, s.seq LIMIT ?`,
      [...pageParams, pageSize + 1],
    );
    const page = rows.slice(0, pageSize);
    const last = page[page.length - 1];
    const sanitize = this.sanitizer(options.toolGate);
    const skills = page.map((row) => ({
      ...this.summary(row, sanitize),
      origin: row.origin,
      scope: row.scope_kind,
      useCount: row.use_count,
      lastUsedAtMs: row.last_used_at_ms,
    }));
    this.emit("skill_list", caller, {
      result_count: skills.length,
      total_count: totalCount,
      page_size: pageSize,
    });
    return {
      skills,
      nextPageToken: rows.length > pageSize && last ? encodePageToken(last.name, last.seq) : "",
      totalCount,
    };
  }

  // -- pre-flight -----------------------------------------------------------------------------------

  getRelevantSkills(
    caller: Caller,
    input: GetRelevantSkillsInput,
    options: CallOptions = {},
  ): GetRelevantSkillsResult {
    const task = (input.task ?? "").trim();
    if (task.length === 0) throw invalidArgument("task must not be empty");
    checkSize(LIMITS.relevantSkillsTask, task.length);
    const topK = withinLimit(LIMITS.relevantSkillsTopK, input.topK);
    const maxTokens = withinLimit(LIMITS.relevantSkillsMaxTokens, input.maxTokens);
    const terms = [...new Set(words(task).filter((w) => w.length > 1 && !STOPWORDS.has(w)))].slice(0, 32);
    const { hits } = this.ftsSearch(caller, terms, undefined, topK, "or");
    const rows =
      hits.length > 0
        ? this.rowsByName(
            caller,
            hits.map((h) => h.row.name),
          )
        : new Map<string, SkillRow>();
    const sanitize = this.sanitizer(options.toolGate);
    const ranked = hits.flatMap((hit) => {
      const row = rows.get(hit.row.name);
      return row ? [{ row, score: hit.score }] : [];
    });
    const views = ranked.map(({ row }) => this.details(row, sanitize));
    const context = renderContext(views, "injection", maxTokens);
    const included = ranked.slice(0, context.includedCount);
    this.store.markUsed(
      included.map(({ row }) => row.seq),
      this.now(),
    );
    this.emit("skills_retrieved", caller, {
      skill_count: included.length,
      top_k: topK,
      raw_tokens_est: context.rawTokens,
      final_tokens_est: context.finalTokens,
      was_compressed: context.compressed,
    });
    return {
      skills: included.map(({ row, score }) => ({ name: row.name, title: sanitize(row)(row.title), score })),
      formattedContext: context.text,
      rawTokensEst: context.rawTokens,
      finalTokensEst: context.finalTokens,
      wasCompressed: context.compressed,
    };
  }

  // -- directory ------------------------------------------------------------------------------------

  renderSkillDirectory(
    caller: Caller,
    input: RenderSkillDirectoryInput = {},
    options: CallOptions = {},
  ): RenderSkillDirectoryResult {
    const maxEntries = withinLimit(LIMITS.skillDirectoryMaxEntries, input.maxEntries);
    const fields = input.fields && input.fields.length > 0 ? input.fields : (["name", "trigger"] as const);
    for (const field of fields) oneOf("field", field, DIRECTORY_FIELDS);
    const where = this.filters(caller, undefined);
    const pinned = this.pinned.slice(0, maxEntries);
    const pinnedRows = pinned.length > 0 ? this.rowsByName(caller, pinned) : new Map<string, SkillRow>();
    const entries: SkillRow[] = pinned.flatMap((name) => {
      const row = pinnedRows.get(name);
      return row ? [row] : [];
    });
    const rest = maxEntries - entries.length;
    if (rest > 0) {
      const exclude = entries.map((row) => row.seq);
      const notPinned = exclude.length > 0 ? ` AND s.seq NOT IN (${exclude.map(() => "?").join(",")})` : "";
      entries.push(
        ...this.store.all<SkillRow>(
          `SELECT s.* FROM skills s WHERE ${where.sql}${notPinned}
           ORDER BY s.last_used_at_ms IS NULL, s.last_used_at_ms DESC, s.use_count DESC, s.name LIMIT ?`,
          [...where.params, ...exclude, rest],
        ),
      );
    }
    const totalVisible =
      this.store.get<{ n: number }>(`SELECT count(*) AS n FROM skills s WHERE ${where.sql}`, where.params)
        ?.n ?? 0;
    const sanitize = this.sanitizer(options.toolGate);
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
    this.emit("skill_directory_rendered", caller, {
      entry_count: entries.length,
      total_visible: totalVisible,
      tokens_est: tokenEstimate,
    });
    return { text, entryCount: entries.length, totalVisible, tokenEstimate };
  }

  // -- helpers --------------------------------------------------------------------------------------

  private checkScope(scope: SkillScope): SkillScope {
    const kind = oneOf("scope.kind", scope?.kind, SCOPE_KINDS);
    if (kind === "global") return { kind, tenantId: "", projectId: "" };
    if (kind === "tenant") {
      if (!scope.tenantId) throw invalidArgument("tenant scope needs a tenant_id");
      return { kind, tenantId: scope.tenantId, projectId: "" };
    }
    if (kind === "project") {
      if (!scope.tenantId || !scope.projectId)
        throw invalidArgument("project scope needs a tenant_id and a project_id");
      return { kind, tenantId: scope.tenantId, projectId: scope.projectId };
    }
    throw invalidArgument(`scope.kind must be one of ${SCOPE_KINDS.join(", ")}`);
  }

  /**
   * Redaction plus tool gating. Global skills are the operator's text; tenant and project skills may
   * be the tenant's own, gated so they never reveal whether a hidden tool exists (ToolService.toolGate).
   */
  private sanitizer(gate: ToolGate | undefined): SanitizerFor {
    const bySomeone = (author: TextAuthor): Sanitize => {
      const rewrite = toolGateRewriter(gate, author);
      return this.redaction ? (text) => redactText(rewrite(text)) : rewrite;
    };
    const operatorText = bySomeone("operator");
    const tenantText = bySomeone("tenant");
    return (row) => (row.scope_kind === "global" ? operatorText : tenantText);
  }

  private summary(row: SearchRow, sanitizeFor: SanitizerFor): SkillSummary {
    const sanitize = sanitizeFor(row);
    return {
      name: row.name,
      title: sanitize(row.title),
      trigger: clip(sanitize(row.trigger_text), 300),
      taskType: row.task_type,
      tags: (JSON.parse(row.tags) as string[]).map(sanitize),
    };
  }

  private details(row: SkillRow, sanitizeFor: SanitizerFor): SkillDetails {
    const sanitize = sanitizeFor(row);
    const skill = rowToSkill(row);
    return {
      id: skill.id,
      name: skill.name,
      title: sanitize(skill.title),
      description: sanitize(skill.description),
      trigger: sanitize(skill.trigger),
      taskType: skill.taskType,
      tags: skill.tags.map(sanitize),
      steps: skill.steps.map(sanitize),
      preconditions: skill.preconditions.map(sanitize),
      failureModes: skill.failureModes.map(sanitize),
      extra: sanitizeJson(skill.extra, sanitize) as Record<string, unknown>,
      origin: skill.origin,
      originRef: skill.originRef,
      contentHash: skill.contentHash,
      scope: skill.scope.kind,
      stats: skill.stats,
    };
  }

  private emit(
    type: EventType,
    caller: Caller | undefined,
    attributes: Record<string, EventAttributeValue>,
    tenantId?: string,
  ): void {
    this.events?.emit({
      type,
      tenantId: caller?.tenantId ?? tenantId ?? "",
      sessionId: caller?.sessionId ?? "",
      runId: caller?.runId ?? "",
      attributes,
    });
  }
}

function sanitizeJson(value: unknown, sanitize: Sanitize): unknown {
  if (typeof value === "string") return sanitize(value);
  if (Array.isArray(value)) return value.map((v) => sanitizeJson(v, sanitize));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, sanitizeJson(v, sanitize)]));
  return value;
}
