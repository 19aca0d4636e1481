import { setImmediate as nextTurn } from "node:timers/promises";
import type { Db } from "../database/sqlite.ts";
import { LruCache } from "../lru.ts";
import { runInSlices } from "../slices.ts";
import { type LearnedRequest, TenantModel } from "./model.ts";
import type { LearningStore, TaughtKey } from "./store.ts";
import { LearnedVectors, VECTOR_CHUNK } from "./vectors.ts";

/** A search waits for at most this many new learned requests to be embedded; more embed in the background. */
const EMBED_WAIT_MAX = 32;

/** The model learned requests' meaning is read with. */
export interface RequestEmbedder {
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
  /** The model's requests as last counted in `held`. */
  counted: number;
}

/**
 * The tenants' models of learned requests held in memory (model.ts): read from the store on a
 * tenant's first search, read again where the store changed, their requests given vectors (stored
 * ones, else the embedder's), and the least recently searched dropped while all of them hold more
 * requests than `learning.max_requests_in_memory`.
 */
export class ModelsInMemory {
  /** The tenants' models, least recently searched first (dropBeyondMemory bounds them). */
  private readonly tenants = new LruCache<string, TenantState>();
  /**
   * The requests of the models in `tenants`, kept as each is read rather than summed on every search:
   * with many small tenants in memory that sum would grow with them.
   */
  private held = 0;
  /** SQLite's count of commits by other connections (the CLI's reset, import): a change re-reads every model. */
  private dataVersion: number;
  /** Where the vectors of learned requests are kept; absent without a model. */
  private readonly vectors: LearnedVectors | undefined;

  constructor(
    private readonly db: Db,
    private readonly store: LearningStore,
    private readonly maxRequestsInMemory: number,
    private readonly embedder: RequestEmbedder | undefined,
    private readonly now: () => number,
    private readonly onError: (error: unknown) => void,
  ) {
    this.dataVersion = this.readDataVersion();
    this.vectors = embedder && new LearnedVectors(db, embedder.modelId);
  }

  /** Learned requests in the models held in memory. */
  get requestsInMemory(): number {
    return this.held;
  }

  /** The tenant's model as a search reads it: current, with its new requests embedded (a few awaited). */
  async model(tenantId: string): Promise<TenantModel> {
    return (await this.ready(tenantId)).model;
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

  /** The store changed `keys` of `tenantId` (or all of them): they are read again before the next search. */
  changed(tenantId: string, keys: readonly TaughtKey[] | "all"): void {
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
    const embedder = this.embedder;
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
    if (this.held <= this.maxRequestsInMemory) return;
    for (const [tenantId, state] of this.tenants.entries()) {
      if (this.held <= this.maxRequestsInMemory) return;
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

  private readDataVersion(): number {
    return this.db.pragma("data_version", { simple: true }) as number;
  }
}

/** Sets `entry` in `model`, with its request's vector when one was embedded before. */
function fill(state: TenantState, model: TenantModel, entry: LearnedRequest): void {
  model.set(entry);
  const vector = state.vectors.get(entry.request);
  if (vector) model.setVector(entry.request, vector);
}
