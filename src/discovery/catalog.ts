import { createHash, randomUUID } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Db } from "../database/sqlite.ts";
import { afterCommit } from "../database/transaction.ts";
import { type FieldViolation, invalidArgument, quoteInput, WayfindError } from "../errors.ts";
import type { EventSink } from "../events/event.ts";
import { checkSize, LIMITS, withinLimit, withinRange } from "../limits.ts";
import { LocalWriter, type ReplicatedWrite, type StateWriter } from "../replication/writes.ts";
import { inSpan } from "../telemetry.ts";
import { LiteralIndex } from "../text/literal-index.ts";
import { SEMANTIC_OFF } from "../text/scores.ts";
import { runInSlices, runToEnd } from "../text/slices.ts";
import { synonymTable } from "../text/synonyms.ts";
import { Candidates, DEFAULT_RANKER, type RankerConfig } from "./ranker.ts";
import { checkLargeExamples } from "./schema-checks.ts";
import { meaningTexts, type QueryReadings, queryReadings, runSearch } from "./search.ts";
import { buildSearchIndex, type PackedAnalysis, toolKey } from "./search-index.ts";
import type {
  EffectiveSearchType,
  GetResponse,
  ListRequest,
  ListResponse,
  RegisterOptions,
  RegisterResult,
  SearchIndex,
  SearchRequest,
  SearchResponse,
  SearchType,
  Tool,
  ToolInput,
  VisibilityPredicate,
  VisibleSet,
} from "./types.ts";
import {
  type ExamplesCheck,
  fullName,
  recordSteps,
  sha256,
  LIMITS as TOOL_LIMITS,
  type ToolRecord,
  toolLabel,
} from "./validate.ts";

const SEARCH_TYPES: readonly SearchType[] = ["fts", "regex", "exact"];
const SOURCE_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.:/@-]{0,127}$/;

export interface CatalogOptions {
  /** Namespaces that win ties, most preferred first. */
  readonly preferredNamespaces?: readonly string[];
  readonly events?: EventSink;
  /** Ranker tuning (benchmarks); the default is what ships. */
  readonly ranker?: RankerConfig;
  /** Old tool name → current name (config `aliases`); tried before the tools' own aliases. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** The operator's synonyms (config `tool_search.synonyms`), beside the built-in ones. */
  readonly synonyms?: Readonly<Record<string, readonly string[]>>;
  /** Told each new index (at start and after changes), e.g. to bring tool vectors up to date. */
  readonly onIndexBuilt?: (index: SearchIndex) => void;
  /** How registrations are written: the server's (shared by replicas); default this database alone. */
  readonly writer?: StateWriter;
}

interface Row {
  name: string;
  source: string;
  owner: string;
  definition: string;
}

/** Visible sets kept per build of the index; a fleet has a few visibility shapes, not thousands. */
const VISIBLE_SETS_MAX = 256;

/**
 * The tool catalog: registration (transactional, hash-diffed) of the tool rows in SQLite, the
 * in-memory search index built from them (search-index.ts) and the reads: search (its paths in
 * search.ts, the ranker in ranker.ts), get and list. Every read applies the caller's visibility (a
 * visible set for search, a predicate for get and list) before anything is ranked, counted or paged.
 *
 * Why one class of ~700 lines: registration, the index lifecycle (versions, sliced builds, waiting
 * readers) and the reads share one state — the tool map, its version and the analysed text — and
 * keeping them together is what makes "a read after a write sees it" checkable in one place. The
 * work itself (validation, index building, search paths, ranking) lives in the modules named above.
 */
export class ToolCatalog {
  /** By toolKey(owner, name). */
  private readonly tools = new Map<string, Tool>();
  /** Name → the tenants that registered a tool of that name (global tools are keyed by name alone). */
  private readonly tenantsByName = new Map<string, Set<string>>();
  /** Alias → owner → canonical name, first registration per owner wins. */
  private readonly aliases = new Map<string, Map<string, string>>();
  /** sha1 of the raw input last accepted per tool key (memory only; a restart just takes the slow path once). */
  private readonly inputDigests = new Map<string, string>();
  /**
   * Analysed text per tool, so a rebuild re-analyses only changed tools. Kept packed (each list
   * joined with SEP: one string instead of an array of small strings, ~3× less heap at 10,000 tools)
   * and unpacked only while the index is built.
   */
  private readonly analysed = new Map<string, PackedAnalysis>();
  /** How many changes the catalog has seen: the version builds, indexes and readers refer to. */
  private version = 0;
  /** The newest index built and the version it holds; dropped at a change, until the next is built. */
  private index: SearchIndex | undefined;
  private indexVersion = -1;
  /** The build under way, run in slices by startIndexBuild. */
  private build: IndexBuild | undefined;
  /** Readers waiting for an index that holds their version (indexReady). */
  private waiting: Waiter[] = [];
  /** The regex path's literal index, per in-memory index (dies with it); absent while it is built. */
  private readonly literalIndexes = new WeakMap<SearchIndex, LiteralIndex>();
  private readonly fingerprints = new Map<string, string>();
  /** The background build of the current index's literal index. */
  private literalIndexBuild: Promise<unknown> = Promise.resolve();
  private readonly preferred: readonly string[];
  private readonly events: EventSink | undefined;
  private readonly rankerConfig: RankerConfig;
  /** Config aliases: old name → current name. */
  private readonly renamed: ReadonlyMap<string, string>;
  /** Abbreviations and synonyms by analysed word: built-in plus config `tool_search.synonyms`. */
  private readonly readings: QueryReadings;
  private readonly onIndexBuilt: ((index: SearchIndex) => void) | undefined;
  /** The registration under way and those queued behind it (see register). */
  private registrations: Promise<unknown> = Promise.resolve();
  private readonly writer: StateWriter;
  /**
   * The in-memory tools of this process's registrations being written, by change id: applying its own
   * change, the catalog takes them instead of parsing the rows again (another replica parses them).
   */
  private readonly builtTools = new Map<string, readonly Tool[]>();

  constructor(
    private readonly db: Db,
    options: CatalogOptions = {},
  ) {
    this.preferred = options.preferredNamespaces ?? [];
    this.events = options.events;
    this.rankerConfig = options.ranker ?? DEFAULT_RANKER;
    this.renamed = new Map(Object.entries(options.aliases ?? {}));
    this.readings = queryReadings(synonymTable(options.synonyms));
    this.onIndexBuilt = options.onIndexBuilt;
    this.writer = options.writer ?? new LocalWriter(db);
    for (const row of db
      .prepare<[], Row>("SELECT name, source, owner, definition FROM discovery_tools")
      .all()) {
      const record = JSON.parse(row.definition) as ToolRecord;
      this.put({ ...record, source: row.source, owner: row.owner });
    }
    this.indexAt();
  }

  get size(): number {
    return this.tools.size;
  }

  /** Every registered tool, unfiltered: callers apply their access control (rendering, gating). */
  all(): Iterable<Tool> {
    return this.tools.values();
  }

  /**
   * sha256 over the sorted (name, hash) pairs of one owner's tools (default: the global ones), so a
   * tenant's fingerprint never moves with another tenant's registrations.
   */
  fingerprint(owner = ""): string {
    let fingerprint = this.fingerprints.get(owner);
    if (fingerprint === undefined) {
      fingerprint = fingerprintOf([...this.tools.values()].filter((t) => t.owner === owner));
      this.fingerprints.set(owner, fingerprint);
    }
    return fingerprint;
  }

  /** The same over one source's tools (e.g. one catalog file): what the log's `catalog loaded` line shows. */
  sourceFingerprint(source: string, owner = ""): string {
    return fingerprintOf([...this.tools.values()].filter((t) => t.owner === owner && t.source === source));
  }

  /**
   * Which owners' tools a tenant sees: its own, and the global ones it has not shadowed with a tool
   * of the same name. Other tenants' tools do not exist for it (the caller's access control applies
   * on top). A tenant-less caller sees the global tools.
   */
  ownershipFilter(tenantId: string): VisibilityPredicate {
    return (tool) =>
      tool.owner === tenantId ||
      (tool.owner === "" && this.tenantsByName.get(tool.name)?.has(tenantId) !== true);
  }

  /**
   * Upserts one source's tools in one transaction; unchanged input writes nothing. Sources and names
   * are per owner: nothing here reads or reports another owner's tools, so a tenant learns nothing
   * about names others registered.
   *
   * Checking the tools is a second or more of work for 5,000 tools with examples, so it runs in
   * slices of about 10 ms between other calls; the write is one synchronous transaction after it, and
   * memory changes only once that has committed. Registrations run one at a time, in call order:
   * two of the same source checked side by side would each diff against the state before either
   * wrote, and one update would be lost. One queue for the whole catalog (not one per source) also
   * keeps registrations from each taking a slice of the same turn.
   */
  register(
    source: string,
    inputs: readonly ToolInput[],
    options: RegisterOptions = {},
  ): Promise<RegisterResult> {
    const registration = this.registrations.then(() => this.registerNext(source, inputs, options));
    // The next registration waits for this one to end, whether or not it succeeds.
    this.registrations = registration.catch(() => undefined);
    return registration;
  }

  /**
   * What a registration will write, worked out in steps of one tool or less (runInSlices spreads them
   * over turns of the event loop). Reads the catalog and changes nothing: registrations are queued,
   * so what it read still holds when the write follows.
   */
  private *prepareRegistration(
    owner: string,
    source: string,
    inputs: readonly ToolInput[],
    replaceSource: boolean,
    examplesChecked: ReadonlyMap<number, ExamplesCheck>,
  ): Generator<void, PreparedRegistration> {
    const problems: FieldViolation[] = [];
    const records: ToolRecord[] = [];
    const seen = new Set<string>();
    const digests = new Map<string, string>();
    const kept: [string, string][] = [];
    for (const [i, input] of inputs.entries()) {
      yield;
      try {
        // Fast path: byte-identical input to what this source registered before cannot differ.
        const digest = createHash("sha1").update(JSON.stringify(input)).digest("base64");
        const known =
          typeof input.name === "string" ? this.tools.get(toolKey(owner, fullName(input))) : undefined;
        if (
          known &&
          known.source === source &&
          this.inputDigests.get(toolKey(owner, known.name)) === digest
        ) {
          if (seen.has(known.name))
            problems.push({
              field: `tools[${i}].name`,
              description: `tool "${known.name}" appears more than once in the request`,
            });
          seen.add(known.name);
          kept.push([known.name, known.hash]);
          continue;
        }
        const record = yield* recordSteps(input, i, examplesChecked.get(i));
        digests.set(record.name, digest);
        if (seen.has(record.name))
          problems.push({
            field: `tools[${i}].name`,
            description: `tool "${record.name}" appears more than once in the request`,
          });
        seen.add(record.name);
        records.push(record);
      } catch (err) {
        // Anything else (a RangeError from a deeply nested input, say) is still the caller's tool.
        problems.push({
          field: `tools[${i}]`,
          description:
            err instanceof WayfindError
              ? err.message
              : `${toolLabel(input, i)}: could not be read: ${(err as Error).message}`,
        });
      }
    }
    const first = problems[0]?.description;
    if (first !== undefined)
      throw invalidArgument(
        problems.length === 1 ? first : `${problems.length} invalid tools: ${first}`,
        problems,
      );
    for (const r of records) {
      const registeredBy = this.tools.get(toolKey(owner, r.name))?.source;
      if (registeredBy !== undefined && registeredBy !== source)
        throw new WayfindError("already_exists", registeredElsewhere(r.name, registeredBy));
    }
    const added: ToolRecord[] = [];
    const updated: ToolRecord[] = [];
    for (const r of records) {
      const existing = this.tools.get(toolKey(owner, r.name));
      if (!existing) added.push(r);
      else if (existing.hash !== r.hash) updated.push(r);
      else kept.push([r.name, r.hash]);
    }
    const removed = replaceSource
      ? [...this.tools.values()]
          .filter((t) => t.owner === owner && t.source === source && !seen.has(t.name))
          .map((t) => t.name)
      : [];
    // The rows and the in-memory tools too (microseconds a tool), so the turn that commits only
    // writes them.
    const rows = {
      added: yield* rowsOf(added, source, owner),
      updated: yield* rowsOf(updated, source, owner),
    };
    const changed: Tool[] = [];
    for (const r of [...added, ...updated]) {
      yield;
      changed.push({ ...r, source, owner });
    }
    return { added, updated, removed, rows, changed, digests, kept };
  }

  /** One registration, its turn come (see register). */
  private async registerNext(
    source: string,
    inputs: readonly ToolInput[],
    options: RegisterOptions,
  ): Promise<RegisterResult> {
    const owner = options.owner ?? "";
    if (typeof source !== "string" || !SOURCE_PATTERN.test(source))
      throw invalidArgument(`source ${quoteInput(source)} must be 1-128 characters of [A-Za-z0-9_.:/@-]`);
    if (inputs.length > TOOL_LIMITS.toolsPerSource)
      throw invalidArgument(
        `${inputs.length} tools in one source; the limit is ${TOOL_LIMITS.toolsPerSource}`,
      );
    // Large args schemas compile in the schema worker first: one compile would be one long step here.
    const examplesChecked = await checkLargeExamples(inputs);
    const prepared = await runInSlices(
      this.prepareRegistration(owner, source, inputs, options.replaceSource ?? false, examplesChecked),
      () => this.db.open,
    );
    if (!prepared) throw closedWhileChecking();
    const { added, updated, removed, rows, changed, digests, kept } = prepared;
    let written = { added: 0, updated: 0, removed: 0 };
    if (added.length + updated.length + removed.length > 0) {
      // The commit gets a turn of its own (5,000 rows: ~20 ms); the last checking slice ran in this one.
      await nextTurn();
      if (!this.db.open) throw closedWhileChecking();
      const change: RegistrationChange = {
        id: randomUUID(),
        owner,
        source,
        replaceSource: options.replaceSource ?? false,
        kept,
        rows: [...rows.added, ...rows.updated].map(({ name, hash, definition }) => ({
          name,
          hash,
          definition,
        })),
      };
      this.builtTools.set(change.id, changed);
      try {
        written = await this.writer.write(this.registerWrite, change, owner);
      } finally {
        this.builtTools.delete(change.id);
      }
      // The fingerprint sorts every tool of the owner: not in the commit's turn either.
      await nextTurn();
    }
    for (const [name, digest] of digests) this.inputDigests.set(toolKey(owner, name), digest);
    return {
      ...written,
      unchanged: kept.length + added.length + updated.length - written.added - written.updated,
      fingerprint: this.fingerprint(owner),
    };
  }

  /**
   * Writes a checked registration: its rows in the transaction, the in-memory tools once it commits.
   * Every replica applies it to its own copy in log order, so what the registrant checked may have
   * changed meanwhile: a tool now owned by another source refuses it as at check time, and a tool it
   * found unchanged that has changed since aborts it (a retry checks it again), so a registration
   * never silently keeps another's version of its own tools.
   */
  readonly registerWrite: ReplicatedWrite<
    RegistrationChange,
    { added: number; updated: number; removed: number }
  > = {
    kind: "discovery/register",
    apply: (change) => {
      const { owner, source } = change;
      // The rows, not the in-memory tools: those change only once the page of changes being applied
      // commits, and an earlier change of the same page may have written this source.
      const current = new Map(
        this.db
          .prepare<[string, string], { name: string; hash: string }>(
            "SELECT name, hash FROM discovery_tools WHERE owner = ? AND source = ?",
          )
          .all(owner, source)
          .map((row) => [row.name, row.hash]),
      );
      for (const [name, hash] of change.kept) {
        if (current.get(name) !== hash)
          throw new WayfindError(
            "aborted",
            `tool "${name}" of source "${source}" changed while this registration was checked; send it again`,
          );
      }
      const arriving = change.rows.filter((row) => !current.has(row.name)).map((row) => row.name);
      // One query for every new name (5,000 point queries took ~13 ms of the commit's turn).
      const elsewhere = new Map(
        arriving.length === 0
          ? []
          : this.db
              .prepare<[string, string], { name: string; source: string }>(
                "SELECT name, source FROM discovery_tools WHERE owner = ? AND name IN (SELECT value FROM json_each(?))",
              )
              .all(owner, JSON.stringify(arriving))
              .map((row) => [row.name, row.source]),
      );
      for (const name of arriving) {
        const other = elsewhere.get(name);
        if (other !== undefined) throw new WayfindError("already_exists", registeredElsewhere(name, other));
      }
      const added = arriving.length;
      const updated = change.rows.filter((row) => {
        const hash = current.get(row.name);
        return hash !== undefined && hash !== row.hash;
      }).length;
      const staying = new Set([...change.kept.map(([name]) => name), ...change.rows.map((row) => row.name)]);
      const removed = change.replaceSource ? [...current.keys()].filter((name) => !staying.has(name)) : [];
      const insert = this.db.prepare(
        `INSERT INTO discovery_tools (owner, name, source, hash, definition)
         VALUES (@owner, @name, @source, @hash, @definition)
         ON CONFLICT (owner, name) DO UPDATE SET hash = excluded.hash, definition = excluded.definition`,
      );
      const remove = this.db.prepare("DELETE FROM discovery_tools WHERE owner = ? AND name = ?");
      const counts = { added, updated, removed: removed.length };
      inSpan("wayfind.register_tools.write", { "wayfind.source": source, ...counts }, () => {
        for (const row of change.rows) insert.run({ ...row, owner, source });
        for (const name of removed) remove.run(owner, name);
      });
      const built = this.builtTools.get(change.id);
      afterCommit(this.db, () => {
        for (const name of removed) this.drop(owner, name);
        change.rows.forEach((row, i) => {
          const key = toolKey(owner, row.name);
          // Whatever input this process accepted for the tool before, it is not what the tool holds now.
          this.inputDigests.delete(key);
          this.put(built?.[i] ?? { ...(JSON.parse(row.definition) as ToolRecord), source, owner });
        });
        this.invalidateIndex();
        this.fingerprints.clear();
      });
      return counts;
    },
  };

  /** The current name of a tool the configuration renamed (config `aliases`), else `name` itself. */
  canonicalName(name: string): string {
    return this.renamed.get(name) ?? name;
  }

  search(request: SearchRequest): SearchResponse {
    return inSpan("wayfind.tool_search", { "wayfind.search.type": request.type ?? "fts" }, (span) => {
      const response = this.searchNow(request);
      span.setAttributes({
        "wayfind.search.result_count": response.tools.length,
        "wayfind.search.strategy": response.strategy,
      });
      return response;
    });
  }

  /**
   * The texts an FTS request is embedded as (search.ts meaningTexts), read against the vocabulary of
   * what the request's visible set may find: repairs come only from words the caller could find
   * anyway. Validates the request as search does, so nothing is embedded for one search refuses.
   */
  meaningTexts(request: SearchRequest): string[] {
    const { query } = validateSearch(request);
    const index = request.visible?.index ?? this.indexAt();
    const candidates = request.visible
      ? request.visible.candidates
      : request.includeAlwaysLoaded
        ? undefined
        : index.deferred;
    return meaningTexts(index, this.canonicalName(query), candidates, this.readings);
  }

  private searchNow(request: SearchRequest): SearchResponse {
    const validated = validateSearch(request);
    const { type, limit, minScore } = validated;
    // A query that is a renamed tool's old name searches for its current name, whatever the type.
    const query = this.canonicalName(validated.query);
    const visible = request.visible;
    const index = visible?.index ?? this.indexAt();
    const candidates = visible
      ? visible.candidates
      : request.includeAlwaysLoaded
        ? undefined
        : index.deferred;
    const totalDeferred = visible ? visible.totalDeferred : index.deferred.count;
    const semantic = type === "fts" ? request.semantic : undefined;
    const depth = semantic ? Math.max(limit, semantic.lexicalDepth) : limit;
    const lexical = runSearch(index, { query, type, limit: depth }, candidates, {
      aliasTargets: (alias) => [...(this.aliases.get(alias)?.values() ?? [])],
      literalIndex: this.literalIndexes.get(index),
      repeat: this.rankerConfig.repeat,
      readings: this.readings,
    });
    const fused = semantic?.fuse(index, candidates, lexical.hits, limit);
    const found = fused ? { ...lexical, hits: fused.hits } : lexical;
    // Scores are absolute, so the threshold applies to each hit alone (hits are in score order).
    const result = { ...found, hits: found.hits.filter((h) => h.score >= minScore) };
    this.events?.emit({
      type: "tool_search_query",
      ...scopeOf(request),
      attributes: {
        query: query.slice(0, 256),
        requested_type: type,
        effective_type: type,
        strategy: result.strategy,
        result_count: result.hits.length,
      },
    });
    const effectiveSearchType: EffectiveSearchType = result.strategy === "fuzzy" ? "fuzzy" : type;
    return {
      tools: result.hits,
      effectiveSearchType,
      strategy: result.strategy,
      totalDeferred,
      rewrites: result.rewrites,
      semantic: fused?.report ?? SEMANTIC_OFF,
    };
  }

  /**
   * Full definitions by name or alias; unknown and hidden names are reported alike. Of the tools
   * sharing a name (one per owner), the first that `isVisible` passes is returned: the caller's
   * predicate (with ownershipFilter) lets at most one through. A predicate, not a visible set, on
   * purpose: it is asked only for the few names requested, on the tool map, which is current the
   * moment a registration commits — a get never waits for an index build.
   */
  get(names: readonly string[], options: { isVisible?: VisibilityPredicate } = {}): GetResponse {
    if (names.length > 100) throw invalidArgument(`${names.length} names requested; ask for at most 100`);
    const tools: Tool[] = [];
    const notFound: string[] = [];
    const taken = new Set<string>();
    for (const requested of names) {
      const tool = this.lookup(requested, options.isVisible);
      if (!tool) notFound.push(requested);
      else if (!taken.has(tool.name)) {
        taken.add(tool.name);
        tools.push(tool);
      }
    }
    return { tools, notFound };
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
    const index = request.visible?.index ?? this.indexAt();
    const allowed = request.visible?.candidates.allowed;
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
   * The tool `requested` names that passes `isVisible`: the one aliases resolve in. A renamed name
   * (config `aliases`) is read as the current name; then the tool of that name, else the one whose
   * own aliases hold it.
   */
  private lookup(asked: string, isVisible: VisibilityPredicate | undefined): Tool | undefined {
    const requested = this.canonicalName(asked);
    const passes = (tool: Tool | undefined): tool is Tool =>
      tool !== undefined && (!isVisible || isVisible(tool));
    // The global tool, then each tenant's of that name: the caller's predicate admits at most one.
    const global = this.tools.get(requested);
    if (global?.owner === "" && passes(global)) return global;
    for (const tenant of this.tenantsByName.get(requested) ?? []) {
      const tool = this.tools.get(toolKey(tenant, requested));
      if (passes(tool)) return tool;
    }
    for (const [owner, name] of this.aliases.get(requested) ?? []) {
      const tool = this.tools.get(toolKey(owner, name));
      if (passes(tool)) return tool;
    }
    return undefined;
  }

  private put(tool: Tool): void {
    const key = toolKey(tool.owner, tool.name);
    const old = this.tools.get(key);
    if (old) this.forgetAliases(old);
    this.tools.set(key, tool);
    if (tool.owner !== "") {
      let tenants = this.tenantsByName.get(tool.name);
      if (!tenants) {
        tenants = new Set();
        this.tenantsByName.set(tool.name, tenants);
      }
      tenants.add(tool.owner);
    }
    for (const a of tool.aliases) {
      let byOwner = this.aliases.get(a);
      if (!byOwner) {
        byOwner = new Map();
        this.aliases.set(a, byOwner);
      }
      if (!byOwner.has(tool.owner) && !this.tools.has(toolKey(tool.owner, a)))
        byOwner.set(tool.owner, tool.name);
    }
  }

  private drop(owner: string, name: string): void {
    const key = toolKey(owner, name);
    const old = this.tools.get(key);
    if (!old) return;
    this.forgetAliases(old);
    this.tools.delete(key);
    const tenants = this.tenantsByName.get(name);
    tenants?.delete(owner);
    if (tenants?.size === 0) this.tenantsByName.delete(name);
    this.analysed.delete(key);
    this.inputDigests.delete(key);
  }

  private forgetAliases(tool: Tool): void {
    for (const a of tool.aliases) {
      const byOwner = this.aliases.get(a);
      if (byOwner?.get(tool.owner) !== tool.name) continue;
      byOwner.delete(tool.owner);
      if (byOwner.size === 0) this.aliases.delete(a);
    }
  }

  /**
   * An index that holds at least `version` (default: every change so far): the newest built when it
   * does, else the build of every change run to its end now, the synchronous fallback for in-process
   * callers that read without awaiting `indexReady()`.
   */
  private indexAt(version = this.version): SearchIndex {
    if (this.index && this.indexVersion >= version) return this.index;
    const build = this.build?.version === this.version ? this.build : this.startIndexBuild();
    try {
      return this.adopt(build, runToEnd(build.steps));
    } catch (error) {
      // A failed build is not resumed: the next read starts over.
      if (this.build === build) this.build = undefined;
      throw error;
    }
  }

  /** Starts building the index of the catalog as it is now, in slices between other calls. */
  private startIndexBuild(): IndexBuild {
    const build: IndexBuild = {
      steps: buildSearchIndex([...this.tools.values()], {
        preferredNamespaces: this.preferred,
        ranker: this.rankerConfig,
        analysed: this.analysed,
      }),
      version: this.version,
    };
    this.build = build;
    runInSlices(build.steps, () => this.build === build).then(
      (index) => {
        if (index) this.adopt(build, index);
      },
      (error: unknown) => {
        if (this.build !== build) return;
        this.build = undefined;
        for (const waiter of this.wakeable(build.version)) waiter.reject(error);
        if (this.waiting.length > 0) this.startIndexBuild();
      },
    );
    return build;
  }

  /** Makes the index `build` made the newest, wakes the readers whose changes it holds. */
  private adopt(build: IndexBuild, index: SearchIndex): SearchIndex {
    if (this.build === build) this.build = undefined;
    if (build.version > this.indexVersion) {
      this.index = index;
      this.indexVersion = build.version;
      this.buildLiteralIndex(index);
      // Emitted whenever an index is built: at start and after changes.
      this.events?.emit({
        type: "tool_search_cache_ready",
        attributes: { tool_count: index.docs.length },
      });
      this.onIndexBuilt?.(index);
    }
    for (const waiter of this.wakeable(build.version)) waiter.resolve(build.version);
    // Changes that came while readers waited for this build: build them next.
    if (!this.build && this.indexVersion < this.version) this.startIndexBuild();
    return index;
  }

  /** Takes the waiting readers that an index of `version` satisfies. */
  private wakeable(version: number): Waiter[] {
    const wake = this.waiting.filter((waiter) => waiter.version <= version);
    this.waiting = this.waiting.filter((waiter) => waiter.version > version);
    return wake;
  }

  /**
   * After a change: a build under way is abandoned for one of the catalog as it is now, unless
   * readers wait for it; then it runs to its end and the next build follows (abandoning it would
   * keep them waiting for as long as changes keep coming).
   */
  private invalidateIndex(): void {
    this.version++;
    // No reader can use it any more (each waits for a newer one): let it go before the next is built.
    this.index = undefined;
    const running = this.build;
    if (running && this.waiting.some((waiter) => waiter.version <= running.version)) return;
    this.startIndexBuild();
  }

  /**
   * Whether the index holds every change so far, without waiting or starting a build (the readiness
   * probe's `index`: ok or building). Reads wait for the index with indexReady.
   */
  get indexCurrent(): boolean {
    return this.index !== undefined && this.indexVersion >= this.version;
  }

  /**
   * Resolves once an index holds every change made before the call (read-your-writes; a build is
   * started if none runs), with the version to read at (`visibleSet`, `list`): a read at that version
   * takes that index, or a newer one, without waiting for changes made since. Rejects if the build
   * fails.
   */
  indexReady(): Promise<number> {
    const version = this.version;
    if (this.index && this.indexVersion >= version) return Promise.resolve(version);
    if (!this.build) this.startIndexBuild();
    return new Promise((resolve, reject) => this.waiting.push({ version, resolve, reject }));
  }

  /**
   * The tools a caller view may find in the current build of the index: those `isVisible` passes,
   * deferred ones only unless always-loaded ones are asked for. `key` names what the view sees (its
   * owner makes it: equal keys must mean an equal `isVisible`); the set is built once per key and
   * build, so the filter is not called per search.
   */
  visibleSet(view: {
    readonly key: string;
    readonly isVisible: VisibilityPredicate;
    readonly includeAlwaysLoaded?: boolean;
    /** The version the caller waited for (indexReady); default: every change so far. */
    readonly version?: number;
  }): VisibleSet {
    const index = this.indexAt(view.version);
    const includeAlways = view.includeAlwaysLoaded ?? false;
    const key = `${includeAlways ? "all" : "deferred"}:${view.key}`;
    let set = index.visibleSets.get(key);
    if (set === undefined) {
      const allowed = new Uint8Array(index.docs.length);
      let totalDeferred = 0;
      index.docs.forEach((t, d) => {
        if (!view.isVisible(t)) return;
        const deferred = t.loadingMode === "deferred";
        if (deferred) totalDeferred++;
        if (deferred || includeAlways) allowed[d] = 1;
      });
      set = { key, index, candidates: new Candidates(allowed), totalDeferred };
      if (index.visibleSets.size >= VISIBLE_SETS_MAX) index.visibleSets.clear();
      index.visibleSets.set(key, set);
    }
    return set;
  }

  /**
   * Starts building the literal index of a new in-memory index, in slices between other calls (about
   * a second of work at 10,000 tools, once held by the first regex search after a change). Regex
   * searches scan without it until it is ready; a newer index abandons the build.
   */
  private buildLiteralIndex(index: SearchIndex): void {
    this.literalIndexBuild = LiteralIndex.buildInSlices(
      index.docs.length,
      (d) => [index.lowerNames[d] ?? "", index.lowerDescriptions[d] ?? "", ...(index.lowerTags[d] ?? [])],
      () => this.index === index,
    ).then((literals) => {
      if (literals) this.literalIndexes.set(index, literals);
    });
  }

  /** Resolves when background work on the index (its build, then its literal index) is done. */
  async settled(): Promise<void> {
    await this.indexReady();
    await this.literalIndexBuild;
  }
}

/** A build of the index of the catalog at `version`. */
interface IndexBuild {
  readonly steps: Generator<void, SearchIndex>;
  readonly version: number;
}

/** A reader waiting for an index that holds `version`. */
interface Waiter {
  readonly version: number;
  readonly resolve: (version: number) => void;
  readonly reject: (error: unknown) => void;
}

function validateSearch(request: SearchRequest): {
  query: string;
  type: SearchType;
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

function scopeOf(request: SearchRequest): { tenantId?: string; sessionId?: string; runId?: string } {
  const s = request.scope;
  if (!s) return {};
  return {
    ...(s.tenantId ? { tenantId: s.tenantId } : {}),
    ...(s.sessionId ? { sessionId: s.sessionId } : {}),
    ...(s.runId ? { runId: s.runId } : {}),
  };
}

function toRow(
  r: ToolRecord,
  source: string,
  owner: string,
): { name: string; source: string; owner: string; hash: string; definition: string } {
  return { name: r.name, source, owner, hash: r.hash, definition: JSON.stringify(r) };
}

/** A discovery_tools row as toRow makes it (named parameters of the INSERT and UPDATE). */
type ToolRow = ReturnType<typeof toRow>;

/** What one registration writes (see ToolCatalog.prepareRegistration). */
interface PreparedRegistration {
  readonly added: readonly ToolRecord[];
  readonly updated: readonly ToolRecord[];
  /** Names of the source's tools that replace_source drops. */
  readonly removed: readonly string[];
  readonly rows: { readonly added: readonly ToolRow[]; readonly updated: readonly ToolRow[] };
  /** The added and updated tools as the catalog holds them in memory. */
  readonly changed: readonly Tool[];
  /** Digest of each checked tool's raw input, by name: the next registration's fast path. */
  readonly digests: ReadonlyMap<string, string>;
  /** Tools found unchanged, with the hash they had: the write checks they still have it. */
  readonly kept: readonly [string, string][];
}

/** A checked registration, as every replica applies it (see ToolCatalog.registerWrite). */
type RegistrationChange = {
  /** Ties the change to the in-memory tools this process built for it (builtTools). */
  readonly id: string;
  readonly owner: string;
  readonly source: string;
  readonly replaceSource: boolean;
  /** Tools of the request found unchanged: [name, hash]. */
  readonly kept: readonly [string, string][];
  /** Tools added or updated: their discovery_tools rows. */
  readonly rows: readonly { readonly name: string; readonly hash: string; readonly definition: string }[];
};

/** Why a registration may not take a tool another source of the same owner registered. */
function registeredElsewhere(name: string, source: string): string {
  return `tool "${name}" is already registered by source "${source}"; rename it or register it from that source`;
}

const closedWhileChecking = () =>
  new WayfindError("unavailable", "the server closed its catalog while checking the tools; retry");

/** The rows of `records`, one step each. */
function* rowsOf(records: readonly ToolRecord[], source: string, owner: string): Generator<void, ToolRow[]> {
  const rows: ToolRow[] = [];
  for (const r of records) {
    yield;
    rows.push(toRow(r, source, owner));
  }
  return rows;
}

/** sha256 over the sorted (name, hash) pairs of `tools`. */
function fingerprintOf(tools: readonly Tool[]): string {
  return sha256(
    tools
      .map((t) => `${t.name}\t${t.hash}\n`)
      .sort()
      .join(""),
  );
}
