import { setTimeout as delay, setImmediate as nextTurn } from "node:timers/promises";
import { type Caller, eventScopeOf } from "../caller/caller.ts";
import type { LearningConfig } from "../config/index.ts";
import type { Db } from "../database/sqlite.ts";
import type { LearnedEvidence } from "../discovery/index.ts";
import { notFound, quoteInput, RetryLaterError, type WayfindError } from "../errors.ts";
import type { EventSink } from "../events/index.ts";
import { LruCache } from "../lru.ts";
import type { StateWriter } from "../replication/writes.ts";
import { runInSlices } from "../text/slices.ts";
import { TokenBucket } from "../token-bucket.ts";
import { type LearnedRequest, TenantModel } from "./model.ts";
import { RecentSearches, type RememberedSearch } from "./searches.ts";
import type { SharedSearches } from "./shared-searches.ts";
import { LearningStore, type TaughtKey } from "./store.ts";
import { LearnedVectors, VECTOR_CHUNK } from "./vectors.ts";

export type Outcome = "succeeded" | "failed" | "wrong_tool";

/** How a hit was chosen: looked at or activated (GetTools, ResolveTool, ActivateTools), or called validly. */
export type Choice = "selected" | "dispatched";

/** What a choice or an outcome teaches the chosen tool, and each hit ranked above it that was passed over. */
const TEACHES = {
  selected: 1,
  dispatched: 1.5,
  /** A dispatch of a tool already counted as selected adds the difference. */
  dispatchedAfterSelected: 0.5,
  succeeded: 1,
  failed: -0.25,
  wrong_tool: -1.5,
  passedOver: -0.2,
} as const;
/** Hits above the chosen one that count as passed over. */
const PASSED_OVER_MAX = 5;
/** A search waits for at most this many new learned requests to be embedded; more embed in the background. */
const EMBED_WAIT_MAX = 32;
/** How much an operator tenant's learned score counts in another tenant's search. */
const OPERATOR_SHARE = 0.5;
/** Learned requests are stored clipped to this many characters. */
const REQUEST_MAX_CHARS = 512;

export interface LearningOptions {
  readonly db: Db;
  readonly writer: StateWriter;
  readonly events?: EventSink;
  readonly config: LearningConfig;
  /** The model meaning is read with; absent = learned requests match by words only. */
  readonly embedder?: RequestEmbedder;
  /** The searches every replica of the fleet can read (PostgreSQL); absent = this server's alone. */
  readonly shared?: SharedSearches;
  readonly onError?: (error: unknown) => void;
  /** Clock in epoch ms; injectable for tests. */
  readonly now?: () => number;
}

interface RequestEmbedder {
  /** Names the model: vectors stored by another model are not used. */
  readonly modelId: string;
  embedQuery(text: string): Promise<Float32Array>;
}

interface TenantState {
  model: TenantModel;
  /** What changed since the model was read: keys, or everything. */
  stale: TaughtKey[] | "all";
  /** Vectors of requests already embedded, reused when the model is read again. */
  vectors: Map<string, Float32Array>;
  embedding: Promise<void> | undefined;
  /** A whole read of the tenant's rows under way (see load). */
  loading: Promise<void> | undefined;
  /** The model's requests as last counted in Learning's `held`. */
  counted: number;
}

/**
 * Learning from use (docs/search.md "Learning from use"): searches are remembered for a window, a hit
 * chosen in the same run (or reported on) teaches the tenant's store, and each search reads the
 * tenant's learned requests as evidence. Nothing of one tenant is read for another.
 */
export class Learning {
  readonly store: LearningStore;
  private readonly searches: RecentSearches;
  /** The tenants' models in memory, least recently searched first (dropBeyondMemory bounds them). */
  private readonly tenants = new LruCache<string, TenantState>();
  /** Each actor's bucket of lessons (admit). */
  private readonly buckets = new LruCache<string, TokenBucket>(ACTORS_TRACKED);
  /** Lessons of choices still being written, by tenant: a search of the tenant waits for them. */
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  private readonly now: () => number;
  private readonly onError: (error: unknown) => void;
  /**
   * The requests of the models in `tenants`, kept as each is read rather than summed on every search:
   * with many small tenants in memory that sum would grow with them.
   */
  private held = 0;
  /** Each run's last read of the shared searches (sharedShowing): when it started, and the read. */
  private readonly runReads = new LruCache<string, { atMs: number; read: Promise<void> }>(10_000);
  /** SQLite's count of commits by other connections (the CLI's reset, import): a change re-reads every model. */
  private dataVersion: number;
  /** Where the vectors of learned requests are kept; absent without a model. */
  private readonly vectors: LearnedVectors | undefined;

  constructor(private readonly options: LearningOptions) {
    this.now = options.now ?? Date.now;
    this.onError = options.onError ?? (() => {});
    this.dataVersion = this.readDataVersion();
    this.vectors = options.embedder && new LearnedVectors(options.db, options.embedder.modelId);
    this.searches = new RecentSearches(options.config.selectionWindowSeconds * 1000, this.now);
    this.store = new LearningStore(
      options.db,
      options.writer,
      options.config,
      (tenantId, keys) => this.changed(tenantId, keys),
      options.events,
    );
  }

  get enabled(): boolean {
    return this.options.config.enabled;
  }

  /** Learned requests in the tenants' models held in memory. */
  get requestsInMemory(): number {
    return this.held;
  }

  /** Remembers a search's hits; the id names it in reports. */
  remember(caller: Caller, request: string, hits: readonly string[]): string {
    return this.rememberSearch(caller.tenantId, caller.runId, request, hits);
  }

  /** Remembers a search here and, with replicas, in the fleet's shared searches. */
  private rememberSearch(tenantId: string, runId: string, request: string, hits: readonly string[]): string {
    const search = this.searches.remember(tenantId, runId, request, hits);
    if (this.enabled && request !== "")
      this.options.shared?.publish({
        id: search.id,
        tenantId,
        runId,
        request: clip(request),
        hits,
        atMs: search.atMs,
      });
    return search.id;
  }

  /**
   * What the caller's tenant (and the operator's tenants, config `learning.operator_tenants`) learned
   * of tools, or of skills, for `request` (with its meaning `vectors`, when the model runs), or
   * undefined when they learned nothing of that kind: then the search is exactly as without learning.
   */
  async evidence(
    caller: Caller,
    request: string,
    vectors: readonly Float32Array[],
    kind: "tool" | "skill" = "tool",
  ): Promise<LearnedEvidence | undefined> {
    if (!this.enabled) return undefined;
    const scores = ofKind(await this.scoresOf(caller.tenantId, request, vectors), kind);
    // The operator's tenants teach everyone, at half strength; no other tenant's lessons are read.
    for (const tenant of this.options.config.operatorTenants) {
      if (tenant === caller.tenantId) continue;
      for (const [tool, score] of ofKind(await this.scoresOf(tenant, request, vectors), kind)) {
        const sum = (scores.get(tool) ?? 0) + OPERATOR_SHARE * score;
        scores.set(tool, Math.max(-1, Math.min(1, sum)));
      }
    }
    return scores.size === 0 ? undefined : { scores, weight: this.options.config.weight };
  }

  /** What `tenantId` alone learned of tools for `request`, once its own lessons in flight are written. */
  private async scoresOf(
    tenantId: string,
    request: string,
    vectors: readonly Float32Array[],
  ): Promise<Map<string, number>> {
    const pending = this.inFlight.get(tenantId);
    if (pending) await Promise.allSettled([...pending]);
    const state = await this.ready(tenantId);
    return state.model.size === 0 ? new Map() : state.model.scores(request, vectors);
  }

  /**
   * The caller chose `tool` (canonical name): if a recent search of its run showed it, that search's
   * request teaches the tool, and the hits ranked above it count as passed over. Never fails the call
   * that chose: a problem is reported to onError.
   */
  async chosen(caller: Caller, tool: string, how: Choice): Promise<void> {
    if (!this.enabled) return;
    const shown =
      this.searches.latestShowing(caller.tenantId, caller.runId, tool) ??
      (await this.sharedShowing(caller, tool));
    if (!shown || shown.search.request === "") return;
    const { search, rank } = shown;
    const first = !search.chosen.has(tool);
    const delta = first ? TEACHES[how] : how === "dispatched" ? TEACHES.dispatchedAfterSelected : 0;
    if (delta === 0 || !this.admit(actorOf(caller), false)) return;
    search.chosen.add(tool);
    const passedOver = first ? search.hits.slice(0, rank).filter((hit) => !search.chosen.has(hit)) : [];
    const written = this.store.teach({
      tenantId: caller.tenantId,
      actor: actorOf(caller),
      request: clip(search.request),
      deltas: [
        { tool, delta },
        ...passedOver.slice(0, PASSED_OVER_MAX).map((hit) => ({ tool: hit, delta: TEACHES.passedOver })),
      ],
      reportKey: "",
    });
    // The choice's call does not wait for the lesson (on replicas, a round trip to the shared log);
    // the tenant's next search on this server does.
    const pending = this.inFlight.get(caller.tenantId) ?? new Set();
    this.inFlight.set(caller.tenantId, pending);
    pending.add(written);
    try {
      await written;
    } catch (error) {
      this.onError(error);
    } finally {
      pending.delete(written);
      if (pending.size === 0) this.inFlight.delete(caller.tenantId);
    }
  }

  /**
   * An agent's verdict on a tool (canonical, visible to the caller) or a skill: a tool's teaches when
   * `searchId` names a full-text search of the caller's tenant that showed it; anything else is an
   * event only. A repeated key is acknowledged as a duplicate and changes nothing. `known` is false
   * for a search id this server does not remember for the tenant (unknown, expired, another's).
   */
  async report(
    caller: Caller,
    report: {
      kind: "tool" | "skill";
      searchId: string;
      name: string;
      outcome: Outcome;
      note: string;
      key: string;
    },
  ): Promise<{ learned: boolean; duplicate: boolean; known: boolean }> {
    const search =
      report.searchId === ""
        ? undefined
        : (this.searches.find(caller.tenantId, report.searchId) ??
          (await this.sharedSearch(caller.tenantId, report.searchId)));
    const learn =
      this.enabled && search !== undefined && search.request !== "" && search.hits.includes(report.name);
    // Over the rate, an explicit report is refused (RESOURCE_EXHAUSTED) rather than silently not learned.
    if (learn) this.admit(actorOf(caller), true);
    const scope = eventScopeOf(caller);
    const common = { outcome: report.outcome, search_id: report.searchId, note: report.note };
    const event =
      report.kind === "tool"
        ? {
            type: "tool_outcome_reported" as const,
            ...scope,
            attributes: { tool: report.name, learned: learn, ...common },
          }
        : {
            type: "skill_outcome_reported" as const,
            ...scope,
            attributes: { skill: report.name, learned: learn, ...common },
          };
    const delta = TEACHES[report.outcome];
    const applied = await this.store.teach({
      tenantId: caller.tenantId,
      actor: actorOf(caller),
      request: learn ? clip(search.request) : "",
      deltas: learn
        ? [{ tool: report.kind === "skill" ? `${SKILL_KEY}${report.name}` : report.name, delta }]
        : [],
      reportKey: report.key === "" ? "" : `${report.kind}:${report.key}`,
      event,
    });
    if (applied && learn && delta > 0) search.chosen.add(report.name);
    return {
      learned: applied && learn,
      duplicate: !applied,
      known: report.searchId === "" || search !== undefined,
    };
  }

  /**
   * Remembers a skill search's request and hits (SearchSkills, GetRelevantSkills), so a report may
   * name it and teach the skill it reports on.
   */
  rememberSkills(caller: Caller, request: string, skills: readonly string[]): string {
    return this.rememberSearch(caller.tenantId, "", request, skills);
  }

  /**
   * The latest search of the caller's run that showed `tool`, answered by another replica. A run's
   * shared searches are read at most once a second (and kept here), so runs that choose without
   * searching cost the database little; a read waits a moment first, for a search answered just now
   * elsewhere to be stored.
   */
  private async sharedShowing(
    caller: Caller,
    tool: string,
  ): Promise<{ search: RememberedSearch; rank: number } | undefined> {
    const shared = this.options.shared;
    if (!shared || caller.runId === "") return undefined;
    const key = `${caller.tenantId}\u0000${caller.runId}`;
    let last = this.runReads.get(key);
    // Choices of one run a moment apart share one read: the later ones wait for it.
    if (last === undefined || this.now() - last.atMs >= SHARED_REREAD_MS) {
      const read = delay(SHARED_STORE_WAIT_MS)
        .then(() => shared.ofRun(caller.tenantId, caller.runId, this.windowStart()))
        .then((stored) => {
          for (const search of stored) this.searches.adopt(search);
        })
        .catch((error: unknown) => this.onError(error));
      last = { atMs: this.now(), read };
      this.runReads.set(key, last);
    }
    await last.read;
    return this.searches.latestShowing(caller.tenantId, caller.runId, tool);
  }

  /** The tenant's search `id`, answered by another replica (read again once a moment later). */
  private async sharedSearch(tenantId: string, id: string): Promise<RememberedSearch | undefined> {
    const shared = this.options.shared;
    if (!shared) return undefined;
    try {
      const stored =
        (await shared.find(tenantId, id, this.windowStart())) ??
        (await delay(SHARED_STORE_WAIT_MS).then(() => shared.find(tenantId, id, this.windowStart())));
      return stored && this.searches.adopt(stored);
    } catch (error) {
      this.onError(error);
      return undefined;
    }
  }

  /** The oldest a search may be for a choice or report to count against it. */
  private windowStart(): number {
    return this.now() - this.options.config.selectionWindowSeconds * 1000;
  }

  /** What `tenantId` learned (of `tool` only, when given), heaviest first. */
  async show(tenantId: string, tool = ""): Promise<LearnedRequest[]> {
    const state = await this.ready(tenantId, false);
    return state.model.list().filter((entry) => tool === "" || entry.tool === tool);
  }

  /**
   * Resolves once every learned request of `tenantId` has its vector (benches, tests); searches wait
   * only for a few.
   */
  async settled(tenantId: string): Promise<void> {
    let state = await this.ready(tenantId, false);
    while (state.embedding) {
      await state.embedding;
      state = await this.ready(tenantId, false);
    }
  }

  private changed(tenantId: string, keys: readonly TaughtKey[] | "all"): void {
    const state = this.tenants.peek(tenantId);
    if (!state) return;
    if (keys === "all" || state.stale === "all") state.stale = "all";
    else state.stale.push(...keys);
  }

  /** The tenant's model, read again where it changed, with new requests embedded (a few awaited). */
  private async ready(tenantId: string, wait = true): Promise<TenantState> {
    const version = this.readDataVersion();
    if (version !== this.dataVersion) {
      this.dataVersion = version;
      for (const [, known] of this.tenants.entries()) known.stale = "all";
    }
    // Reading the model is a use: the least recently searched are dropped first.
    let state = this.tenants.get(tenantId);
    if (!state) {
      state = {
        model: new TenantModel(),
        stale: "all",
        vectors: new Map(),
        embedding: undefined,
        loading: undefined,
        counted: 0,
      };
      this.tenants.set(tenantId, state);
    }
    // A whole read under way: keys changed meanwhile are read after it, into the model it made.
    while (state.loading) await state.loading;
    if (state.stale === "all") {
      state.stale = [];
      state.loading = this.load(state, tenantId);
      await state.loading;
    } else if (state.stale.length > 0) {
      const keys = state.stale;
      state.stale = [];
      for (const entry of this.store.read(tenantId, this.now(), keys)) fill(state, state.model, entry);
    }
    // A model dropped meanwhile (by another tenant's search) is no longer counted.
    if (this.tenants.peek(tenantId) === state) {
      this.held += state.model.size - state.counted;
      state.counted = state.model.size;
    }
    this.dropBeyondMemory(tenantId);
    const embedder = this.options.embedder;
    if (!embedder) return state;
    const missing = state.model.unembedded().filter((request) => !state.vectors.has(request));
    if (missing.length > 0 && !state.embedding)
      state.embedding = this.embed(tenantId, state, missing, embedder);
    if (wait && state.embedding && missing.length <= EMBED_WAIT_MAX) await state.embedding;
    return state;
  }

  /**
   * Drops the models searched least recently while the models in memory hold more learned requests
   * than `learning.max_requests_in_memory`; never `keep`'s, nor one being read or embedded.
   */
  private dropBeyondMemory(keep: string): void {
    if (this.held <= this.options.config.maxRequestsInMemory) return;
    for (const [tenantId, state] of this.tenants.entries()) {
      if (this.held <= this.options.config.maxRequestsInMemory) return;
      if (tenantId === keep || state.loading || state.embedding) continue;
      this.held -= state.counted;
      this.tenants.delete(tenantId);
    }
  }

  /**
   * Reads the tenant's model whole, into a new model swapped in at the end. At its row bound that is
   * more work than one turn of the event loop should hold, so rows are read a page and entries added
   * a slice at a time. A row changed meanwhile is read again after (its key is stale by then).
   */
  private async load(state: TenantState, tenantId: string): Promise<void> {
    try {
      const pages = this.store.readInPages(tenantId, this.now());
      const model = new TenantModel();
      await runInSlices(
        (function* () {
          for (const page of pages)
            for (const entry of page) {
              fill(state, model, entry);
              yield;
            }
        })(),
        () => true,
      );
      state.model = model;
    } finally {
      state.loading = undefined;
    }
    // A whole read follows a restart, a reset or an import: the vectors of requests gone are dropped.
    if (this.vectors) void this.forgetStaleVectors(this.vectors, tenantId);
  }

  /** Deletes the tenant's stale vectors a chunk per turn, after the search that read the model. */
  private async forgetStaleVectors(vectors: LearnedVectors, tenantId: string): Promise<void> {
    try {
      do await nextTurn();
      while (vectors.forgetStale(tenantId));
    } catch (error) {
      this.onError(error);
    }
  }

  /**
   * Gives `requests` their vectors: the stored ones first, a chunk per turn, then the model's for the
   * rest, each stored as it comes.
   */
  private async embed(
    tenantId: string,
    state: TenantState,
    requests: readonly string[],
    embedder: RequestEmbedder,
  ): Promise<void> {
    const set = (request: string, vector: Float32Array) => {
      state.vectors.set(request, vector);
      state.model.setVector(request, vector);
    };
    try {
      let left = [...requests];
      if (this.vectors) {
        const unstored: string[] = [];
        for (let at = 0; at < left.length; at += VECTOR_CHUNK) {
          const chunk = left.slice(at, at + VECTOR_CHUNK);
          const stored = this.vectors.read(tenantId, chunk);
          for (const request of chunk) {
            const vector = stored.get(request);
            if (vector) set(request, vector);
            else unstored.push(request);
          }
          await nextTurn();
        }
        left = unstored;
      }
      for (const request of left) {
        const vector = await embedder.embedQuery(request);
        set(request, vector);
        this.vectors?.save(tenantId, request, vector);
      }
    } catch (error) {
      this.onError(error);
    } finally {
      state.embedding = undefined;
    }
  }

  private readonly readDataVersion = (): number =>
    this.options.db.pragma("data_version", { simple: true }) as number;

  /** One lesson from `actor`'s bucket; an explicit report over the rate is RESOURCE_EXHAUSTED. */
  private admit(actor: string, explicit: boolean): boolean {
    const rate = this.options.config.lessonsPerSecond;
    const now = this.now();
    // A burst of ten seconds' worth of lessons.
    const bucket = this.buckets.get(actor) ?? new TokenBucket(rate, rate * 10, now);
    this.buckets.set(actor, bucket);
    if (bucket.take(now)) return true;
    if (!explicit) return false;
    const waitMs = Math.ceil(bucket.waitMs());
    throw new RetryLaterError(
      `too many outcome reports from this principal: at most ${rate} per second are learned from; retry in ${waitMs} ms`,
      waitMs,
    );
  }
}

/** Sets `entry` in `model`, with its request's vector when one was embedded before. */
function fill(state: TenantState, model: TenantModel, entry: LearnedRequest): void {
  model.set(entry);
  const vector = state.vectors.get(entry.request);
  if (vector) model.setVector(entry.request, vector);
}

/** Actors whose lesson buckets are kept; the least recently teaching is forgotten (a full bucket again). */
const ACTORS_TRACKED = 10_000;
/** A search answered on another replica is stored within this, most of the time. */
const SHARED_STORE_WAIT_MS = 250;
/** A run's shared searches are read again at most this often. */
const SHARED_REREAD_MS = 1_000;

/**
 * Skills are learned beside tools, under their name with this prefix: no tool name holds a colon, so
 * a skill's lessons never lift a tool.
 */
const SKILL_KEY = "skill:";

/** The learned scores of one kind, under their own names. */
function ofKind(scores: ReadonlyMap<string, number>, kind: "tool" | "skill"): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, score] of scores) {
    const isSkill = key.startsWith(SKILL_KEY);
    if (kind === "skill" && isSkill) out.set(key.slice(SKILL_KEY.length), score);
    else if (kind === "tool" && !isSkill) out.set(key, score);
  }
  return out;
}

/** Who a lesson counts for: the credential, or without credentials the user the caller names. */
function actorOf(caller: Caller): string {
  if (caller.actor !== undefined && caller.actor !== "anonymous") return caller.actor;
  return caller.userId === "" ? "anonymous" : `user:${caller.userId}`;
}

/** A request as stored: control characters and runs of space as one space, clipped. */
function clip(request: string): string {
  return request
    .replace(/[\s\p{Cc}]+/gu, " ")
    .trim()
    .slice(0, REQUEST_MAX_CHARS);
}

/** A search id this server does not remember for the caller's tenant: unknown, expired or another's alike. */
export function unknownSearch(searchId: string): WayfindError {
  return notFound(
    `search_id ${quoteInput(searchId)} is unknown or expired: searches are remembered for learning.selection_window_seconds after they were answered; report sooner, or leave search_id empty`,
  );
}
