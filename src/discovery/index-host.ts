/** The search index over the registry's tools (IndexHost): its versioned builds and the reads over them. */

import { invalidArgument } from "../errors.ts";
import type { EventSink } from "../events/event.ts";
import { checkSize, LIMITS, withinLimit, withinRange } from "../limits.ts";
import { type MatchType, SEARCH_TYPES, searchReport } from "../search/answer.ts";
import type { SemanticQuery } from "../search/evidence.ts";
import { meaningTexts, type QueryReadings, queryReadings } from "../search/fts.ts";
import type { DocHit } from "../search/fusion.ts";
import { FUSION_DEPTH, hybridDepth, rankHybrid } from "../search/hybrid.ts";
import { type LexicalResult, rankLexical, readLexical } from "../search/lexical.ts";
import { LiteralIndex } from "../search/literal-index.ts";
import type { ModelWords } from "../search/model-words.ts";
import type { Candidates, RankerConfig } from "../search/ranker-options.ts";
import { DEFAULT_GOOD_MATCH_SCORE, SEMANTIC_OFF } from "../search/scores.ts";
import { synonymTable } from "../search/synonyms.ts";
import { VersionedIndex } from "../search/versioned-index.ts";
import { inSpan } from "../telemetry.ts";
import type { ToolRegistry } from "./registry.ts";
import { buildSearchIndex, type PackedAnalysis, TOOL_RANKER, toolKey } from "./search-index.ts";
import type {
  EventScope,
  ListRequest,
  ListResponse,
  PreparedSearch,
  SearchEvidence,
  SearchHit,
  SearchIndex,
  SearchRequest,
  SearchResponse,
  Tool,
} from "./types.ts";
import { visibleSet } from "./views.ts";

export interface IndexHostOptions {
  /** Namespaces that win ties, most preferred first. */
  readonly preferredNamespaces?: readonly string[];
  readonly events?: EventSink;
  /** Ranker tuning (benchmarks); the default is what ships. */
  readonly ranker?: RankerConfig;
  /** The operator's synonyms (config `tool_search.synonyms`), beside the built-in ones. */
  readonly synonyms?: Readonly<Record<string, readonly string[]>>;
  /** Told each new index (at start and after changes), e.g. to bring tool vectors up to date. */
  readonly onIndexBuilt?: (index: SearchIndex) => void;
  /** The sentence model's words, which a request's meaning text is repaired against too (meaningTexts). */
  readonly modelWords?: ModelWords;
  /** A search whose best hit scores below it reports a weak match (config `tool_search.good_match_score`). */
  readonly goodMatchScore?: number;
}

/**
 * The in-memory search index of the registry's tools (search-index.ts) and the reads over it: search
 * (its paths in search.ts, the ranker in ranker.ts) and list. Builds are versioned by the registry's
 * version: one starts after each change, in slices between other calls, and `ready()` gives a reader
 * the build that holds its writes, which its view (ToolView) then reads. Every read masks the build
 * with the caller's view (views.ts) before anything is ranked, counted or paged.
 */
export class IndexHost {
  /**
   * Analysed text per tool, so a rebuild re-analyses only changed tools. Kept packed (each list
   * joined with SEP: one string instead of an array of small strings: a fraction of the heap)
   * and unpacked only while the index is built.
   */
  private readonly analysed = new Map<string, PackedAnalysis>();
  /** The versioned builds of the registry's index (the lifecycle every catalog shares). */
  private readonly builds: VersionedIndex<SearchIndex>;
  /** The regex path's literal index, per in-memory index (dies with it); absent while it is built. */
  private readonly literalIndexes = new WeakMap<SearchIndex, LiteralIndex>();
  /** The lexical ranking meaningOf worked out for a search, so the search that follows ranks its words once. */
  private readonly rankedWords = new WeakMap<
    PreparedSearch,
    { readonly depth: number; readonly lexical: LexicalResult }
  >();
  /** The background build of the current index's literal index. */
  private literalIndexBuild: Promise<unknown> = Promise.resolve();
  private readonly preferred: readonly string[];
  private readonly events: EventSink | undefined;
  private readonly rankerConfig: RankerConfig;
  /** Abbreviations and synonyms by analysed word: built-in plus config `tool_search.synonyms`. */
  private readonly readings: QueryReadings;
  private readonly modelWords: ModelWords | undefined;
  private readonly onIndexBuilt: ((index: SearchIndex) => void) | undefined;
  private readonly goodMatchScore: number;

  constructor(
    private readonly registry: ToolRegistry,
    options: IndexHostOptions = {},
  ) {
    this.preferred = options.preferredNamespaces ?? [];
    this.events = options.events;
    this.rankerConfig = options.ranker ?? TOOL_RANKER;
    this.readings = queryReadings(synonymTable(options.synonyms));
    this.modelWords = options.modelWords;
    this.onIndexBuilt = options.onIndexBuilt;
    this.goodMatchScore = options.goodMatchScore ?? DEFAULT_GOOD_MATCH_SCORE;
    this.builds = new VersionedIndex({
      version: () => this.registry.version,
      build: () =>
        buildSearchIndex([...this.registry.all()], {
          preferredNamespaces: this.preferred,
          ranker: this.rankerConfig,
          analysed: this.analysed,
        }),
      adopted: (index) => this.adopted(index),
    });
    this.current();
    void this.followChanges();
  }

  /**
   * Reads a request once for its meaning and its search: validated, its query canonicalised, masked
   * with the caller's view (without one: the deferred tools, or all, of `over`, else of the newest
   * build) and read as its type reads it (readLexical).
   */
  prepare(request: SearchRequest, over?: SearchIndex): PreparedSearch {
    const { type, limit, minScore, query: asked } = validateSearch(request);
    // A query that is a renamed tool's old name searches for its current name, whatever the type.
    const query = this.registry.canonicalName(asked);
    const { index, candidates, totalDeferred } = this.searchable(request, over);
    return {
      ...readLexical(query, type, this.readings),
      limit,
      minScore,
      index,
      candidates,
      totalDeferred,
      scope: request.scope,
    };
  }

  /** Searches a request: prepares it, then runs it (searchPrepared); `evidence` over the build it reads. */
  search(request: SearchRequest, evidence: SearchEvidence = {}): SearchResponse {
    return this.searchPrepared(this.prepare(request, evidence.semantic?.index), evidence);
  }

  /** Runs a prepared search, applying what is known of the request besides its words (FTS only). */
  searchPrepared(search: PreparedSearch, evidence: SearchEvidence = {}): SearchResponse {
    return inSpan("wayfind.tool_search", { "wayfind.search.type": search.type }, (span) => {
      const response = this.searchNow(search, evidence);
      span.setAttributes({
        "wayfind.search.result_count": response.tools.length,
        "wayfind.search.strategy": response.strategy,
      });
      return response;
    });
  }

  /**
   * What semantic search needs of an FTS request: the texts it is embedded as (meaningTexts), read
   * against the vocabulary of what the request may find (repairs come only from words the caller
   * could find anyway), and those tools.
   */
  meaningOf(search: PreparedSearch): SemanticQuery<SearchIndex> {
    const { index, candidates, read } = search;
    if (!read) throw new Error("the meaning of a search is worked out for FTS requests only");
    // The words first: how much they say tells how much the request needs the model (wordsScore);
    // ranked as deep as a hybrid search fuses, so the search that follows reuses them.
    const depth = Math.max(search.limit, FUSION_DEPTH);
    const lexical = this.rank(search, depth);
    this.rankedWords.set(search, { depth, lexical });
    return {
      texts: meaningTexts(index, read, candidates, this.modelWords),
      index,
      candidates,
      wordsScore: lexical.hits.reduce((best, hit) => Math.max(best, hit.lexicalScore), 0),
    };
  }

  /** The search's lexical hits to `depth`: those meaningOf ranked when deep enough, else ranked now. */
  private lexicalHits(search: PreparedSearch, depth: number): LexicalResult {
    const ranked = this.rankedWords.get(search);
    if (ranked && ranked.depth >= depth)
      return { ...ranked.lexical, hits: ranked.lexical.hits.slice(0, depth) };
    return this.rank(search, depth);
  }

  private rank(search: PreparedSearch, depth: number): LexicalResult {
    const literalIndex = this.literalIndexes.get(search.index);
    return rankLexical(search.index, search, search.candidates, depth, {
      aliasTargets: (alias) => this.registry.aliasTargets(alias),
      ...(literalIndex ? { literalIndex } : {}),
      repeat: this.rankerConfig.repeat,
      readings: this.readings,
    });
  }

  /**
   * What a search may return: the view's tools not in its prompt yet (or all it may activate, when
   * `includeAlwaysLoaded`); without a view, the deferred tools (or all) of `over`, else of the
   * newest build.
   */
  private searchable(
    request: SearchRequest,
    over: SearchIndex | undefined,
  ): { index: SearchIndex; candidates: Candidates | undefined; totalDeferred: number } {
    if (request.view)
      return visibleSet(request.view, request.includeAlwaysLoaded ? "activatable" : "findable");
    const index = over ?? this.current();
    const candidates = request.includeAlwaysLoaded ? undefined : index.deferred;
    return { index, candidates, totalDeferred: index.deferred.count };
  }

  private searchNow(search: PreparedSearch, evidence: SearchEvidence): SearchResponse {
    const { query, type, limit, minScore, index, candidates } = search;
    // Meaning and learning speak of what a request means: not of a pattern or a name.
    const hybrid = type === "fts" ? evidence : {};
    const { semantic } = hybrid;
    const depth = hybridDepth(limit, hybrid);
    const lexical = this.lexicalHits(search, depth);
    const ranked = rankHybrid(index, query, lexical.hits, depth, hybrid, candidates?.allowed);
    // Scores are absolute, so the threshold applies to each hit alone (hits are in score order).
    const tools = ranked
      .slice(0, limit)
      .map((hit) => searchHit(index, hit))
      .filter((hit) => hit.score >= minScore);
    const report = searchReport(type, lexical, semantic?.report ?? SEMANTIC_OFF, tools, this.goodMatchScore);
    this.events?.emit({
      type: "tool_search_query",
      ...scopeOf(search.scope),
      attributes: {
        query: query.slice(0, 256),
        requested_type: type,
        effective_type: type,
        strategy: report.strategy,
        result_count: tools.length,
        semantic_status: report.semantic.status,
        semantic_texts_pending: report.semantic.textsPending,
        semantic_tier: report.semantic.tier,
      },
    });
    return { ...report, tools, totalDeferred: search.totalDeferred };
  }

  /** Visible tools by name, paged; the token is the last name of the previous page. */
  list(request: ListRequest = {}): ListResponse {
    const pageSize = withinLimit(LIMITS.listToolsPageSize, request.pageSize);
    let after = "";
    if (request.pageToken) {
      after = Buffer.from(request.pageToken, "base64url").toString("utf8");
      if (!after.startsWith("n:"))
        throw invalidArgument("page_token is not one this server issued; omit it to start over");
      after = after.slice(2);
    }
    const set = request.view && visibleSet(request.view, request.showAll ? "activatable" : "shown");
    const index = set?.index ?? this.current();
    const allowed = set?.candidates.allowed;
    const listed = (d: number) => allowed === undefined || allowed[d] === 1;
    const tools: Tool[] = [];
    let total = 0;
    let last = "";
    index.docs.forEach((t, d) => {
      if (!listed(d)) return;
      total++;
      if (t.name <= after && after !== "") return;
      if (tools.length < pageSize) {
        tools.push(t);
        last = t.name;
      }
    });
    const more = tools.length === pageSize && index.docs.some((t, d) => t.name > last && listed(d));
    return {
      tools,
      nextPageToken: more ? Buffer.from(`n:${last}`, "utf8").toString("base64url") : "",
      totalSize: total,
    };
  }

  /**
   * An index that holds every change so far: the newest built when it does, else the build of every
   * change run to its end now, the synchronous fallback for in-process callers that read without a
   * view (which holds the build `ready()` gave).
   */
  private current(): SearchIndex {
    return this.builds.current();
  }

  /** Follow-ups of a new index: forget removed tools, build its literal index, tell who listens. */
  private adopted(index: SearchIndex): void {
    this.forgetRemoved(index);
    this.buildLiteralIndex(index);
    // Emitted whenever an index is built: at start and after changes.
    this.events?.emit({ type: "tool_search_cache_ready", attributes: { tool_count: index.docs.length } });
    this.onIndexBuilt?.(index);
  }

  /** Drops the analysed text of tools the registry no longer holds (every tool of a build has its entry). */
  private forgetRemoved(index: SearchIndex): void {
    if (this.analysed.size <= index.docs.length) return;
    const kept = new Set(index.docs.map((t) => toolKey(t.owner, t.name)));
    for (const key of this.analysed.keys()) if (!kept.has(key)) this.analysed.delete(key);
  }

  /** Follows the registry, for as long as the registry lives: after each change, a build of the catalog as it is now. */
  private async followChanges(): Promise<void> {
    for (;;) {
      await this.registry.changed();
      this.builds.changed();
    }
  }

  /**
   * Whether the index holds every change so far, without waiting or starting a build (the readiness
   * probe's `index`: ok or building). Reads wait for the index with ready.
   */
  get indexCurrent(): boolean {
    return this.builds.isCurrent;
  }

  /**
   * Resolves once an index holds every change made before the call (read-your-writes), with that
   * build: the one a caller's view reads (ToolView.index), without waiting for changes made since.
   * Rejects if the build fails.
   */
  ready(): Promise<SearchIndex> {
    return this.builds.ready();
  }

  /**
   * Starts building the literal index of a new in-memory index, in slices between other calls (about
   * a second of work at 10,000 tools, once held by the first regex search after a change). Regex
   * searches scan without it until it is ready; a newer index abandons the build.
   */
  private buildLiteralIndex(index: SearchIndex): void {
    this.literalIndexBuild = LiteralIndex.buildInSlices(
      index.docs.length,
      (d) => [index.foldedNames[d] ?? "", ...(index.foldedTexts[d] ?? [])],
      () => this.builds.isNewest(index),
    ).then((literals) => {
      if (literals) this.literalIndexes.set(index, literals);
    });
  }

  /** Resolves when background work on the index (its build, then its literal index) is done. */
  async settled(): Promise<void> {
    await this.ready();
    await this.literalIndexBuild;
  }
}

function validateSearch(request: SearchRequest): {
  query: string;
  type: PreparedSearch["type"];
  limit: number;
  minScore: number;
} {
  const type = request.type ?? "fts";
  if (!SEARCH_TYPES.includes(type))
    throw invalidArgument(
      `search type ${JSON.stringify(type)} is unknown; use one of ${SEARCH_TYPES.join(", ")}`,
    );
  if (typeof request.query !== "string") throw invalidArgument("query must be a string");
  const query = request.query.trim();
  if (query.length === 0) throw invalidArgument("query is empty; pass words, a regex or a tool name");
  checkSize(LIMITS.searchToolsQuery, query.length);
  return {
    query,
    type,
    limit: withinLimit(LIMITS.searchToolsLimit, request.limit),
    minScore: withinRange(LIMITS.searchToolsMinScore, request.minScore),
  };
}

function scopeOf(s: EventScope | undefined): { tenantId?: string; sessionId?: string; runId?: string } {
  if (!s) return {};
  return {
    ...(s.tenantId ? { tenantId: s.tenantId } : {}),
    ...(s.sessionId ? { sessionId: s.sessionId } : {}),
    ...(s.runId ? { runId: s.runId } : {}),
  };
}

/** A tool hit as search answers it. */
function searchHit(index: SearchIndex, hit: DocHit<MatchType>): SearchHit {
  const tool = index.docs[hit.doc] as Tool;
  return {
    name: tool.name,
    description: tool.description,
    score: hit.score,
    lexicalScore: hit.lexicalScore,
    semanticScore: hit.semanticScore,
    learnedScore: hit.learnedScore,
    matchType: hit.matchType,
    loadingMode: tool.loadingMode,
  };
}
