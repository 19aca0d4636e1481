import { createHash } from "node:crypto";
import { RE2JS } from "re2js";
import { type FieldViolation, invalidArgument, quoteInput, WayfindError } from "../errors.ts";
import type { EventSink } from "../events/event.ts";
import { checkSize, LIMITS, withinLimit } from "../limits.ts";
import type { Db } from "../store/database.ts";
import {
  type CallerRegex,
  compileCallerRegex,
  fold,
  matches,
  matchesAtStart,
  matchesWhole,
  mayMatch,
  REGEX_LENGTH_LIMIT,
} from "../text/caller-regex.ts";
import { LiteralIndex } from "../text/literal-index.ts";
import { firstSentence, minMaxScale, REGEX_SCORE } from "../text/scores.ts";
import { runInSlices } from "../text/slices.ts";
import { DEFAULT_RANKER, FIELD_COUNT, type RankedDoc, Ranker, type RankerConfig } from "./ranker.ts";
import { ensureFtsIndex } from "./schema.ts";
import { analyze, bareName, nameKey, splitWords, stem } from "./text.ts";
import type {
  GetResponse,
  JsonObject,
  ListRequest,
  ListResponse,
  MatchType,
  RegisterOptions,
  RegisterResult,
  SearchHit,
  SearchRequest,
  SearchResponse,
  SearchStrategy,
  SearchType,
  SideEffects,
  Tool,
  ToolInput,
  VisibilityPredicate,
} from "./types.ts";
import {
  fullName,
  isObject,
  recordSteps,
  sha256,
  LIMITS as TOOL_LIMITS,
  type ToolRecord,
  toolLabel,
} from "./validate.ts";

const SEARCH_TYPES: readonly SearchType[] = ["fts", "regex", "exact"];
const SIDE_EFFECT_RANK: Record<SideEffects, number> = {
  pure: 0,
  read: 1,
  write: 2,
  external: 3,
  stateful: 4,
};
const SOURCE_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.:/@-]{0,127}$/;

export interface CatalogOptions {
  /** Namespaces that win ties, most preferred first. */
  readonly preferredNamespaces?: readonly string[];
  readonly events?: EventSink;
  /** Ranker tuning (benchmarks); the default is what ships. */
  readonly ranker?: RankerConfig;
  /** Behave as if this SQLite had no FTS5 (tests of the fallback). */
  readonly disableFts5?: boolean;
}

/** Separates packed analysed terms; never part of a term (phrases hold spaces, terms no controls). */
const SEP = "\u0001";

interface PackedAnalysis {
  readonly hash: string;
  readonly fields: readonly string[];
  readonly words: string;
  readonly glued: string;
}

interface Row {
  name: string;
  source: string;
  owner: string;
  definition: string;
}

/**
 * A tool's identity: names are unique per owner ("" = global), not across owners. A global tool's
 * key is its name (no extra string per tool); a tenant's holds a NUL, which no name contains.
 */
function toolKey(owner: string, name: string): string {
  return owner === "" ? name : `${owner}\u0000${name}`;
}

interface Index {
  /** Tools sorted by name; position = doc id. */
  readonly docs: readonly Tool[];
  readonly ranker: Ranker;
  /** nameKey of full name, bare name and aliases → doc ids. */
  readonly keys: ReadonlyMap<string, readonly number[]>;
  /** Exact name → its first doc id; docs of the same name (one per owner) follow it (see sameName). */
  readonly byName: ReadonlyMap<string, number>;
  readonly deferredMask: Uint8Array;
  readonly deferredCount: number;
  /** Per doc, for the regex path's literal pre-check: bare name, folded name and description. */
  readonly bare: readonly string[];
  readonly lowerNames: readonly string[];
  readonly lowerDescriptions: readonly string[];
  readonly lowerTags: readonly (readonly string[])[];
  /** Doc ids in tie-break order, and each doc's position in it. */
  readonly tieOrder: Int32Array;
  readonly tieRank: Int32Array;
  /** Candidate masks by content (see internMask): callers that see the same tools share one. */
  readonly sharedMasks: Map<number, Candidates[]>;
}

interface Candidates {
  readonly allowed: Uint8Array;
  readonly totalDeferred: number;
}

/** Distinct candidate masks kept per index; a fleet has a few visibility shapes, not thousands. */
const SHARED_MASKS_MAX = 256;

/**
 * The tool catalog: registration (transactional, hash-diffed), the SQLite/FTS5 persisted index and
 * the search, get and list reads. All reads take the caller's visibility predicate and apply it
 * before anything is ranked, counted or paged.
 */
export class ToolCatalog {
  readonly fts5Available: boolean;
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
  private index: Index | undefined;
  /** Candidate masks by predicate identity; entries die with their predicate (see candidates()). */
  private readonly masks = new WeakMap<
    VisibilityPredicate,
    { index: Index; includeAlways: boolean; candidates: Candidates }
  >();
  /** The regex path's literal index, per in-memory index (dies with it); absent while it is built. */
  private readonly literalIndexes = new WeakMap<Index, LiteralIndex>();
  private readonly fingerprints = new Map<string, string>();
  /** The background build of the current index's literal index. */
  private literalIndexBuild: Promise<unknown> = Promise.resolve();
  private readonly preferred: readonly string[];
  private readonly events: EventSink | undefined;
  private readonly rankerConfig: RankerConfig;
  /** The registration under way and those queued behind it (see register). */
  private registrations: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Db,
    options: CatalogOptions = {},
  ) {
    this.preferred = options.preferredNamespaces ?? [];
    this.events = options.events;
    this.rankerConfig = options.ranker ?? DEFAULT_RANKER;
    this.fts5Available = !options.disableFts5 && ensureFtsIndex(db);
    for (const row of db
      .prepare<[], Row>("SELECT name, source, owner, definition FROM discovery_tools")
      .all()) {
      const record = JSON.parse(row.definition) as ToolRecord;
      this.put({ ...record, source: row.source, owner: row.owner });
    }
    this.ensureIndex();
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
      const lines = [...this.tools.values()]
        .filter((t) => t.owner === owner)
        .map((t) => `${t.name}\t${t.hash}\n`)
        .sort();
      fingerprint = sha256(lines.join(""));
      this.fingerprints.set(owner, fingerprint);
    }
    return fingerprint;
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
  ): Generator<void, PreparedRegistration> {
    const problems: FieldViolation[] = [];
    const records: ToolRecord[] = [];
    const seen = new Set<string>();
    const digests = new Map<string, string>();
    let unchanged = 0;
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
          unchanged++;
          continue;
        }
        const record = yield* recordSteps(input, i);
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
        throw new WayfindError(
          "already_exists",
          `tool "${r.name}" is already registered by source "${registeredBy}"; rename it or register it from that source`,
        );
    }
    const added: ToolRecord[] = [];
    const updated: ToolRecord[] = [];
    for (const r of records) {
      const existing = this.tools.get(toolKey(owner, r.name));
      if (!existing) added.push(r);
      else if (existing.hash !== r.hash) updated.push(r);
      else unchanged++;
    }
    const removed = replaceSource
      ? [...this.tools.values()]
          .filter((t) => t.owner === owner && t.source === source && !seen.has(t.name))
          .map((t) => t.name)
      : [];
    // The rows too (JSON and search text: ~10 µs a tool), so the transaction only writes.
    const rows = {
      added: yield* rowsOf(added, source, owner),
      updated: yield* rowsOf(updated, source, owner),
    };
    return { added, updated, removed, rows, digests, unchanged };
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
    const prepared = await runInSlices(
      this.prepareRegistration(owner, source, inputs, options.replaceSource ?? false),
      () => this.db.open,
    );
    if (!prepared)
      throw new WayfindError("unavailable", "the server closed its catalog while checking the tools; retry");
    const { added, updated, removed, rows, digests, unchanged } = prepared;
    if (added.length + updated.length + removed.length > 0) {
      const insert = this.db.prepare(
        `INSERT INTO discovery_tools (owner, name, source, hash, definition, search_name, description, search_tags, search_params)
         VALUES (@owner, @name, @source, @hash, @definition, @search_name, @description, @search_tags, @search_params)`,
      );
      const update = this.db.prepare(
        `UPDATE discovery_tools SET hash = @hash, definition = @definition, search_name = @search_name,
           description = @description, search_tags = @search_tags, search_params = @search_params WHERE owner = @owner AND name = @name`,
      );
      const remove = this.db.prepare("DELETE FROM discovery_tools WHERE owner = ? AND name = ?");
      this.db.transaction(() => {
        for (const row of rows.added) insert.run(row);
        for (const row of rows.updated) update.run(row);
        for (const name of removed) remove.run(owner, name);
      })();
      for (const name of removed) this.drop(owner, name);
      for (const r of [...added, ...updated]) this.put({ ...r, source, owner });

      this.index = undefined;
      this.fingerprints.clear();
    }
    for (const [name, digest] of digests) this.inputDigests.set(toolKey(owner, name), digest);
    return {
      added: added.length,
      updated: updated.length,
      removed: removed.length,
      unchanged,
      fingerprint: this.fingerprint(owner),
    };
  }

  search(request: SearchRequest): SearchResponse {
    const { query, type, limit } = validateSearch(request);
    const index = this.ensureIndex();
    const { allowed, totalDeferred } = this.candidates(
      index,
      request.isVisible,
      request.includeAlwaysLoaded ?? false,
    );
    let effective: SearchType = type;
    let result: { hits: SearchHit[]; strategy: SearchStrategy };
    if (type === "exact") result = { hits: this.exact(index, query, allowed, limit), strategy: "exact" };
    else if (type === "regex")
      result = { hits: this.regex(index, compileCallerRegex(query), allowed, limit), strategy: "regex" };
    else if (!this.fts5Available) {
      // Without FTS5 the contract is the regex path over the query's words, reported as such.
      effective = "regex";
      // Alternation of the query's words, as many as fit the regex length cap.
      let pattern = "";
      for (const w of new Set(splitWords(query))) {
        const next = pattern ? `${pattern}|${RE2JS.quote(w)}` : RE2JS.quote(w);
        if (next.length > REGEX_LENGTH_LIMIT) break;
        pattern = next;
      }
      if (!pattern) pattern = RE2JS.quote(query.slice(0, 64));
      result = { hits: this.regex(index, compileCallerRegex(pattern), allowed, limit), strategy: "regex" };
    } else result = this.fts(index, query, allowed, limit);
    this.events?.emit({
      type: "tool_search_query",
      ...scopeOf(request),
      attributes: {
        query: query.slice(0, 256),
        requested_type: type,
        effective_type: effective,
        strategy: result.strategy,
        result_count: result.hits.length,
      },
    });
    return { tools: result.hits, effectiveSearchType: effective, strategy: result.strategy, totalDeferred };
  }

  /**
   * Full definitions by name or alias; unknown and hidden names are reported alike. Of the tools
   * sharing a name (one per owner), the first that `isVisible` passes is returned: the caller's
   * predicate (with ownershipFilter) lets at most one through.
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
    const index = this.ensureIndex();
    const visible = request.isVisible;
    const tools: ListResponse["tools"][number][] = [];
    let total = 0;
    let last = "";
    for (const t of index.docs) {
      if (visible && !visible(t)) continue;
      total++;
      if (t.name <= after && after !== "") continue;
      if (tools.length < pageSize) {
        tools.push({
          name: t.name,
          description: firstSentence(t.description),
          loadingMode: t.loadingMode,
        });
        last = t.name;
      }
    }
    const more =
      tools.length === pageSize && index.docs.some((t) => t.name > last && (!visible || visible(t)));
    return {
      tools,
      nextPageToken: more ? Buffer.from(`n:${last}`, "utf8").toString("base64url") : "",
      totalSize: total,
    };
  }

  /** The tool called `requested` (else the one it is an alias of) that passes `isVisible`. */
  private lookup(requested: string, isVisible: VisibilityPredicate | undefined): Tool | undefined {
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

  private ensureIndex(): Index {
    if (this.index) return this.index;
    const docs = [...this.tools.values()].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0,
    );
    const analysed = docs.map((t) => {
      const key = toolKey(t.owner, t.name);
      const cached = this.analysed.get(key);
      if (cached && cached.hash === t.hash) return cached;
      const texts = searchText(t);
      const f = texts.map(analyze);
      f.push([...pairs(f[0] ?? []), ...pairs(f[3] ?? [])]);
      const entry = {
        hash: t.hash,
        fields: f.map((terms) => terms.join(SEP)),
        // Words of the prose (description, parameters): the dictionary glued names are split with.
        words: [...new Set(splitWords(`${texts[3] ?? ""} ${texts[4] ?? ""}`))].join(SEP),
        // Long name parts that may be several words run together ("getrandomimage").
        glued: [...new Set(splitWords(texts[0] ?? ""))]
          .filter((w) => w.length >= GLUED_MIN && /^[a-z]+$/.test(w))
          .join(SEP),
      };
      this.analysed.set(key, entry);
      return entry;
    });
    const unpack = (packed: string) => (packed ? packed.split(SEP) : []);
    const fields = segmentGluedNames(
      analysed.map((a) => ({ fields: a.fields.map(unpack), words: unpack(a.words), glued: unpack(a.glued) })),
    );
    const order = docs.map((_, i) => i);
    const pref = (t: Tool) => {
      const i = this.preferred.indexOf(t.namespace);
      return i < 0 ? this.preferred.length : i;
    };
    order.sort((x, y) => {
      const a = docs[x] as Tool;
      const b = docs[y] as Tool;
      return (
        pref(a) - pref(b) ||
        SIDE_EFFECT_RANK[a.sideEffects] - SIDE_EFFECT_RANK[b.sideEffects] ||
        a.name.length - b.name.length ||
        x - y
      );
    });
    const tieRank = new Int32Array(docs.length);
    order.forEach((doc, pos) => {
      tieRank[doc] = pos;
    });
    const keys = new Map<string, number[]>();
    const byName = new Map<string, number>();
    const addKey = (k: string, d: number) => {
      if (!k) return;
      const list = keys.get(k);
      if (!list) keys.set(k, [d]);
      else if (!list.includes(d)) list.push(d);
    };
    const deferredMask = new Uint8Array(docs.length);
    let deferredCount = 0;
    docs.forEach((t, d) => {
      if (!byName.has(t.name)) byName.set(t.name, d);
      addKey(nameKey(t.name), d);
      addKey(nameKey(bareName(t.name)), d);
      for (const a of t.aliases) addKey(nameKey(a), d);
      if (t.loadingMode === "deferred") {
        deferredMask[d] = 1;
        deferredCount++;
      }
    });
    this.index = {
      docs,
      ranker: new Ranker(fields, tieRank, this.rankerConfig),
      keys,
      byName,
      deferredMask,
      deferredCount,
      tieOrder: Int32Array.from(order),
      tieRank,
      sharedMasks: new Map(),
      bare: docs.map((t) => bareName(t.name)),
      lowerNames: docs.map((t) => fold(t.name)),
      lowerDescriptions: docs.map((t) => fold(t.description)),
      lowerTags: docs.map((t) => t.tags.map(fold)),
    };
    this.buildLiteralIndex(this.index);
    // Emitted whenever the in-memory index is (re)built: at start and on the first read after a change.
    this.events?.emit({
      type: "tool_search_cache_ready",
      attributes: { tool_count: docs.length, fts5_available: this.fts5Available },
    });
    return this.index;
  }

  /** Which docs may be returned (visible, and deferred unless always-loaded are asked for). */
  private candidates(
    index: Index,
    isVisible: VisibilityPredicate | undefined,
    includeAlways: boolean,
  ): { allowed: Uint8Array | undefined; totalDeferred: number } {
    if (!isVisible)
      return { allowed: includeAlways ? undefined : index.deferredMask, totalDeferred: index.deferredCount };
    // A caller that passes the same predicate again (ToolService does, per caller view) gets the
    // mask it built last time: asking 10,000 tools is about half of a search's cost.
    const cached = this.masks.get(isVisible);
    if (cached?.index === index && cached.includeAlways === includeAlways) return cached.candidates;
    const candidates = internMask(index, this.buildMask(index, isVisible, includeAlways));
    this.masks.set(isVisible, { index, includeAlways, candidates });
    return candidates;
  }

  private buildMask(index: Index, isVisible: VisibilityPredicate, includeAlways: boolean): Candidates {
    const allowed = new Uint8Array(index.docs.length);
    let totalDeferred = 0;
    index.docs.forEach((t, d) => {
      if (!isVisible(t)) return;
      const deferred = t.loadingMode === "deferred";
      if (deferred) totalDeferred++;
      if (deferred || includeAlways) allowed[d] = 1;
    });
    return { allowed, totalDeferred };
  }

  private fts(
    index: Index,
    query: string,
    allowed: Uint8Array | undefined,
    limit: number,
  ): { hits: SearchHit[]; strategy: SearchStrategy } {
    const sequence = analyze(query);
    let words = [...new Set(sequence)];
    // A query of only stopwords ("how to") still searches for its words.
    if (words.length === 0) words = [...new Set(splitWords(query))];
    const nameHits = index.keys.get(nameKey(query)) ?? [];
    const ranked = index.ranker.rank(words.slice(0, 64), {
      limit,
      allowed,
      nameHits,
      phrases: [...new Set([...pairs(sequence), ...joinedIdentifiers(query)])],
      wordWeights: words.map(
        (w) => 1 + this.rankerConfig.repeat * Math.log(sequence.filter((x) => x === w).length || 1),
      ),
    });
    const scores = minMaxScale(ranked.docs.map((d) => d.relevance));
    const hits = ranked.docs.map((doc, i) =>
      hit(index.docs[doc.doc] as Tool, scores[i] ?? 0.5, doc.fuzzy ? "fts_fuzzy" : "fts"),
    );
    return { hits, strategy: ranked.strategy };
  }

  private exact(index: Index, query: string, allowed: Uint8Array | undefined, limit: number): SearchHit[] {
    const ok = (d: number) => !allowed || allowed[d] === 1;
    const aliasOf = [...(this.aliases.get(query) ?? [])].flatMap(([, name]) => sameName(index, name));
    const direct = [...sameName(index, query), ...aliasOf].find(ok);
    if (direct !== undefined) return [hit(index.docs[direct] as Tool, 1, "exact")];
    const ranked: RankedDoc[] = (index.keys.get(nameKey(query)) ?? [])
      .filter(ok)
      .map((doc) => ({ doc, relevance: 1, fuzzy: false }));
    ranked.sort((a, b) => index.ranker.compare(a, b));
    return ranked.slice(0, limit).map((r) => hit(index.docs[r.doc] as Tool, 1, "exact_normalized"));
  }

  /**
   * Starts building the literal index of a new in-memory index, in slices between other calls (about
   * a second of work at 10,000 tools, once held by the first regex search after a change). Regex
   * searches scan without it until it is ready; a newer index abandons the build.
   */
  private buildLiteralIndex(index: Index): void {
    this.literalIndexBuild = LiteralIndex.buildInSlices(
      index.docs.length,
      (d) => [index.lowerNames[d] ?? "", index.lowerDescriptions[d] ?? "", ...(index.lowerTags[d] ?? [])],
      () => this.index === index,
    ).then((literals) => {
      if (literals) this.literalIndexes.set(index, literals);
    });
  }

  /** Resolves when background work on the current in-memory index (the literal index) is done. */
  async settled(): Promise<void> {
    await this.literalIndexBuild;
  }

  private regex(index: Index, re: CallerRegex, allowed: Uint8Array | undefined, limit: number): SearchHit[] {
    const top: RankedDoc[] = [];
    const kinds = new Map<number, MatchType>();
    const consider = (doc: number, relevance: number, kind: MatchType) => {
      const item = { doc, relevance, fuzzy: false };
      let i = top.length;
      while (i > 0 && index.ranker.compare(top[i - 1] as RankedDoc, item) > 0) i--;
      if (i >= limit) return;
      top.splice(i, 0, item);
      kinds.set(doc, kind);
      if (top.length > limit) top.pop();
    };
    const { docs, bare, lowerNames } = index;
    // 1 = the name matched (or the doc is not a candidate): skip it in the text pass.
    const done = new Uint8Array(docs.length);
    // Visiting docs in tie-break order means a later doc enters only with a strictly higher score,
    // so once the page is full the cheaper checks (and finally the whole scan) can stop early. The
    // literal index, once built, narrows the visit to docs holding the pattern's literals.
    const literalIndex = this.literalIndexes.get(index);
    const narrowed =
      literalIndex && (re.literals.length > 0 || re.prefixLiteral)
        ? literalIndex.candidates(re.literals, re.prefixLiteral)
        : undefined;
    const visit = narrowed ? inTieOrder(index, narrowed) : index.tieOrder;
    for (const d of visit) {
      if (allowed && allowed[d] !== 1) continue;
      const floor = top.length < limit ? -1 : (top[limit - 1] as RankedDoc).relevance;
      if (floor >= REGEX_SCORE.fullName) break;
      const name = (docs[d] as Tool).name;
      const lowered = lowerNames[d] ?? "";
      if (!mayMatch(re, lowered) || !matches(re, name, lowered)) continue;
      done[d] = 1;
      const b = bare[d] ?? name;
      const loweredBare = b === name ? lowered : fold(b);
      if (matchesWhole(re, name, lowered) || (b !== name && matchesWhole(re, b, loweredBare)))
        consider(d, REGEX_SCORE.fullName, "regex_full_name");
      else if (floor >= REGEX_SCORE.namePrefix) continue;
      else if (matchesAtStart(re, name, lowered) || (b !== name && matchesAtStart(re, b, loweredBare)))
        consider(d, REGEX_SCORE.namePrefix, "regex_name_prefix");
      else if (floor < REGEX_SCORE.nameSubstring)
        consider(d, REGEX_SCORE.nameSubstring, "regex_name_substring");
    }
    // Text-only matches score lowest: only needed when names did not fill the page.
    if (top.length < limit)
      for (const d of visit) {
        // Every text-only hit scores the same and arrives in tie order: a full page cannot change.
        if (top.length >= limit) break;
        if (done[d] === 1 || (allowed && allowed[d] !== 1)) continue;
        const t = docs[d] as Tool;
        const description = index.lowerDescriptions[d] ?? "";
        const inDescription = mayMatch(re, description) && matches(re, t.description, description);
        const tags = index.lowerTags[d] ?? [];
        if (
          inDescription ||
          t.tags.some((tag, i) => mayMatch(re, tags[i] ?? "") && matches(re, tag, tags[i] ?? ""))
        )
          consider(d, REGEX_SCORE.text, "regex_text");
      }
    return top.map((r) => hit(docs[r.doc] as Tool, r.relevance, kinds.get(r.doc) ?? "regex_text"));
  }
}

/** Doc ids of the tools called `name`, one per owner (docs are sorted by name, then owner). */
function sameName(index: Index, name: string): number[] {
  const first = index.byName.get(name);
  const ids: number[] = [];
  if (first === undefined) return ids;
  for (let d = first; d < index.docs.length && index.docs[d]?.name === name; d++) ids.push(d);
  return ids;
}

/**
 * `docs` in tie-break order: few are sorted by rank; many are picked from the tie order through a
 * mask (no sort; a plain array, since a generator allocates a result object per doc it yields).
 */
function inTieOrder(index: Index, docs: Int32Array): Int32Array {
  if (docs.length <= 256)
    return Int32Array.from(docs, (d) => index.tieRank[d] as number)
      .sort()
      .map((rank) => index.tieOrder[rank] as number);
  const mask = new Uint8Array(index.docs.length);
  for (let i = 0; i < docs.length; i++) mask[docs[i] as number] = 1;
  const ordered = new Int32Array(docs.length);
  let k = 0;
  const { tieOrder } = index;
  for (let i = 0; i < tieOrder.length; i++) {
    const d = tieOrder[i] as number;
    if (mask[d] === 1) ordered[k++] = d;
  }
  return ordered;
}

/**
 * The mask object already held for the same content, else this one. Every new caller view (a new
 * run, say) brings a new predicate, but most see the same tools as others: sharing the mask object
 * lets the ranker reuse the corpus statistics it caches per mask instead of recounting them.
 * Contents are compared byte for byte, so a hash collision can never hand out another caller's mask.
 */
function internMask(index: Index, candidates: Candidates): Candidates {
  const bytes = candidates.allowed;
  let hash = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) hash = Math.imul(hash ^ (bytes[i] as number), 0x01000193);
  const bucket = index.sharedMasks.get(hash) ?? [];
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (const held of bucket)
    if (view.equals(Buffer.from(held.allowed.buffer, held.allowed.byteOffset, held.allowed.byteLength)))
      return held;
  if (index.sharedMasks.size >= SHARED_MASKS_MAX) index.sharedMasks.clear();
  bucket.push(candidates);
  index.sharedMasks.set(hash, bucket);
  return candidates;
}

function validateSearch(request: SearchRequest): { query: string; type: SearchType; limit: number } {
  const type = request.type ?? "fts";
  if (!SEARCH_TYPES.includes(type))
    throw invalidArgument(
      `search type ${JSON.stringify(type)} is unknown; use one of ${SEARCH_TYPES.join(", ")}`,
    );
  if (typeof request.query !== "string") throw invalidArgument("query must be a string");
  const query = request.query.trim();
  if (query.length === 0) throw invalidArgument("query is empty; pass words, a regex or a tool name");
  checkSize(LIMITS.searchToolsQuery, query.length);
  return { query, type, limit: withinLimit(LIMITS.searchToolsLimit, request.limit) };
}

function hit(t: Tool, score: number, matchType: MatchType): SearchHit {
  return { name: t.name, description: t.description, score, matchType, loadingMode: t.loadingMode };
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

const GLUED_MIN = 6;

/** Identifiers of the query ("getRandomImage", "get_random_image") also as one word, as glued names spell them. */
function joinedIdentifiers(query: string): string[] {
  const out: string[] = [];
  for (const chunk of query.split(/[^A-Za-z0-9_.-]+/)) {
    const words = splitWords(chunk);
    if (words.length >= 2 && words.length <= 6) out.push(stem(words.join("")));
  }
  return out;
}

/**
 * Name parts written as one run of letters ("getrandomimage", "weatherapi") are split into words the
 * catalog's own prose uses, and those words are added to the name field. The dictionary is the
 * catalog's description and parameter words, so this adapts to any catalog without a word list.
 */
function segmentGluedNames(
  analysed: readonly { fields: string[][]; words: string[]; glued: string[] }[],
): string[][][] {
  const dict = new Set<string>();
  for (const a of analysed) for (const w of a.words) if (w.length >= 3 && w.length <= 20) dict.add(w);
  const memo = new Map<string, string[]>();
  return analysed.map((a) => {
    const extra: string[] = [];
    for (const w of a.glued) {
      if (dict.has(w)) continue;
      let parts = memo.get(w);
      if (!parts) {
        parts = segment(w, dict);
        memo.set(w, parts);
      }
      for (const p of parts) extra.push(...analyze(p));
    }
    if (extra.length === 0) return a.fields;
    const fields = [...a.fields];
    fields[0] = [...(a.fields[0] ?? []), ...extra];
    return fields;
  });
}

/** Fewest dictionary words (3+ letters each) that spell `word` exactly; [] when none do. */
function segment(word: string, dict: ReadonlySet<string>): string[] {
  const n = word.length;
  if (n > 40) return [];
  const best = new Array<number>(n + 1).fill(Number.POSITIVE_INFINITY);
  const from = new Array<number>(n + 1).fill(-1);
  best[0] = 0;
  for (let i = 3; i <= n; i++)
    for (let j = Math.max(0, i - 20); j <= i - 3; j++) {
      const cost = (best[j] ?? Number.POSITIVE_INFINITY) + 1;
      if (cost < (best[i] ?? Number.POSITIVE_INFINITY) && dict.has(word.slice(j, i))) {
        best[i] = cost;
        from[i] = j;
      }
    }
  if (!Number.isFinite(best[n] ?? Number.POSITIVE_INFINITY) || (best[n] ?? 0) < 2) return [];
  const parts: string[] = [];
  for (let i = n; i > 0; i = from[i] ?? 0) parts.unshift(word.slice(from[i] ?? 0, i));
  return parts;
}

/** Adjacent word pairs, the proximity signal of the `phrases` field. */
function pairs(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < words.length; i++) out.push(`${words[i - 1]} ${words[i]}`);
  return out;
}

/** The text of each ranker field, in FIELDS order (name, title, tags, description, params). */
function searchText(t: ToolRecord): string[] {
  const texts = [
    [t.name, ...t.aliases].join(" "),
    t.title,
    t.tags.join(" "),
    t.description,
    paramText(t.argsSchema, 0),
  ];
  return texts.slice(0, FIELD_COUNT);
}

/** Parameter names and descriptions, a few levels deep. */
function paramText(schema: JsonObject, depth: number): string {
  if (depth > 3) return "";
  const parts: string[] = [];
  const props = schema.properties;
  if (isObject(props))
    for (const [key, value] of Object.entries(props)) {
      parts.push(key);
      if (isObject(value)) {
        if (typeof value.description === "string") parts.push(value.description);
        if (typeof value.title === "string") parts.push(value.title);
        parts.push(paramText(value, depth + 1));
        if (isObject(value.items)) parts.push(paramText(value.items, depth + 1));
      }
    }
  return parts.filter((p) => p.length > 0).join(" ");
}

function toRow(r: ToolRecord, source: string, owner: string): Record<string, string> {
  const [name = "", title = "", tags = "", description = "", params = ""] = searchText(r);
  // FTS5 stores split identifiers so its own tokenizer sees words, not snake_case blobs.
  return {
    name: r.name,
    source,
    owner,
    hash: r.hash,
    definition: JSON.stringify(r),
    search_name: [splitWords(name).join(" "), splitWords(title).join(" ")].join(" ").trim(),
    description,
    search_tags: splitWords(tags).join(" "),
    search_params: params,
  };
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
  /** Digest of each checked tool's raw input, by name: the next registration's fast path. */
  readonly digests: ReadonlyMap<string, string>;
  readonly unchanged: number;
}

/** The rows of `records`, one step each. */
function* rowsOf(records: readonly ToolRecord[], source: string, owner: string): Generator<void, ToolRow[]> {
  const rows: ToolRow[] = [];
  for (const r of records) {
    yield;
    rows.push(toRow(r, source, owner));
  }
  return rows;
}
