import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { LruCache } from "../lru.ts";
import { ModelWords } from "../search/model-words.ts";
import { workerEntry } from "../worker-entry.ts";
import { REST_WHILE_BUSY, SPARE_AFTER_MS, UNIT_TOKENS } from "./batches.ts";
import type { ScoreCalibration } from "./calibration.ts";
import { paddedLength } from "./model.ts";
import { type FolderTokenizer, MODEL_FILES, readTokenizer, requireFile } from "./model-folder.ts";
import { StaticTier } from "./static-tier.ts";
import type { FromWorker, TextKind, ToWorker, WorkerSettings } from "./worker-protocol.ts";

/** What the vector store needs from a model: who it is, its dimension, and vectors for texts. */
export interface TextEmbedder {
  readonly modelId: string;
  readonly dims: number;
  /** One L2-normalised vector per text, in the background (after every query a search waits for). */
  embedTexts(texts: readonly string[]): Promise<Float32Array[]>;
}

/** What a search needs: a request's vector, soon, and what a cosine means for this model. */
export interface QueryEmbedder extends TextEmbedder {
  /** How the model's cosines become semantic scores (its folder's calibration.json, else the default). */
  readonly calibration: ScoreCalibration;
  /** The model's static tier, when its folder has one: meaning in microseconds, of a lower quality. */
  readonly staticTier: StaticTier | undefined;
  /**
   * The query's vector by the model, ahead of every text no search waits for; `deadline` (Date.now):
   * until when the search waits, after which the text is embedded when the model has time; `need`, in
   * [0, 1]: how much the search needs the model (queries of more need go first; default 1). Rejects
   * with EmbedderBusy, at once, when too many query texts already wait.
   */
  embedQuery(text: string, deadline?: number, need?: number): Promise<Float32Array>;
  /**
   * Embeds the query when the model has time (no search waits for it), so the same request is read by
   * the model when asked again; nothing happens when it is cached or already on its way.
   */
  embedLater(text: string): void;
  /** The query's vector if it is cached and computed (no promise, no wait), else undefined. */
  cachedQuery(text: string): Float32Array | undefined;
  /**
   * How long `texts`, asked now with `need` (default 1), would take to be embedded: the query texts
   * ahead of them that searches still wait for (those of as much need or more), theirs, and an
   * inference of other work under way, at the model's pace lately.
   */
  expectedWaitMs(texts: readonly string[], need?: number): number;
  /**
   * Whether a request asked now would delay no one: no search waits for the model, and the event loop
   * is not busy with other calls.
   */
  readonly idle: boolean;
}

/** The embedder refused a query because too many wait already: the search answers without it. */
export class EmbedderBusy extends Error {
  override readonly name = "EmbedderBusy";
}

export interface EmbedderOptions {
  /** Threads of inference (config tool_search.semantic.threads); default the machine's cores. */
  readonly threads?: number;
  /** Query vectors kept (384 floats each: 1.5 KiB). */
  readonly queryCacheSize?: number;
  /** Query texts a search waits for, at most; past it, embedQuery refuses (EmbedderBusy). */
  readonly maxQueuedQueries?: number;
}

const DEFAULTS = { queryCacheSize: 4_096, maxQueuedQueries: 256 } as const;

/** How often the event loop's load is read, and above what share of that time it is busy. */
const EVENT_LOOP_SAMPLE_MS = 250;
const EVENT_LOOP_BUSY = 0.6;

interface Pending {
  readonly texts: number;
  /** Padded tokens of its texts (what its inference costs, at the model's pace). */
  readonly tokens: number;
  kind: TextKind;
  /** For a query: until when (Date.now) its search waits for it. */
  deadline: number;
  /** For a query: how much its search needs the model (BatchQueue goes by it). */
  need: number;
  /** For `later` work: a search asked for it again (the worker was told). */
  askedAgain?: boolean;
  readonly resolve: (vectors: Float32Array) => void;
  readonly reject: (err: Error) => void;
}

interface CachedQuery {
  readonly promise: Promise<Float32Array>;
  readonly requestId: number;
  vector?: Float32Array;
}

/**
 * Sentence embeddings from a model folder, computed in a worker thread that owns the ONNX session
 * (as many inference threads as configured). Every text goes to the worker at once; there, queries a
 * search waits for go first, then texts no one waits for (embedLater), taking turns with the
 * catalog's texts, in inferences padded to a few fixed lengths (embed-worker.ts, batches.ts). A model
 * whose vectors would depend on their batch is run one text per inference (SentenceModel.batchable).
 * Query vectors are cached, least recently used out. The model's pace (reported with each answer) and
 * the queries ahead tell a search whether waiting would pay (expectedWaitMs); the folder's static
 * tier, when it has one, reads a request at once when it would not.
 */
export class Embedder implements QueryEmbedder {
  private readonly pending = new Map<number, Pending>();
  private nextRequestId = 1;
  private queuedQueries = 0;
  /** The model's time per padded token lately (the worker's Pace, with each answer). */
  private msPerToken: number;
  private closed = false;
  /** Settles when the worker has stopped (answered `stop`) or ended. */
  private stopped: Promise<void>;
  private markStopped = () => {};
  private readonly queryCache: LruCache<string, CachedQuery>;
  /** Reads the event loop's load and tells the worker when it turns busy or idle. */
  private readonly loopWatch: NodeJS.Timeout;
  /** Whether the worker was last told the event loop is busy (it then rests after each inference). */
  private loopBusy = false;
  /** When a search last asked the worker for a text (Date.now): `later` work waits SPARE_AFTER_MS after. */
  private queryAt = 0;

  private constructor(
    private readonly worker: Worker,
    ready: Extract<FromWorker, { type: "ready" }>,
    /** The model's tokenizer on this thread: a text's length (for the pace) and the static tier's pieces. */
    private readonly tokenizer: FolderTokenizer,
    readonly staticTier: StaticTier | undefined,
    private readonly options: Required<Pick<EmbedderOptions, "queryCacheSize" | "maxQueuedQueries">>,
  ) {
    this.modelId = ready.modelId;
    this.dims = ready.dims;
    this.batchable = ready.batchable;
    this.calibration = ready.calibration;
    this.msPerToken = ready.msPerToken;
    this.words = new ModelWords(tokenizer.words);
    this.queryCache = new LruCache(options.queryCacheSize);
    this.stopped = new Promise((resolve) => {
      this.markStopped = resolve;
    });
    worker.on("message", (message: FromWorker) => this.settle(message));
    worker.on("error", (err) => {
      this.markStopped();
      this.fail(err);
    });
    worker.on("exit", (code) => {
      this.markStopped();
      this.fail(new Error(`the embedding worker exited (code ${code})`));
    });
    worker.unref();
    let last = performance.eventLoopUtilization();
    this.loopWatch = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, last).utilization > EVENT_LOOP_BUSY;
      last = now;
      if (busy === this.loopBusy || this.closed) return;
      this.loopBusy = busy;
      worker.postMessage({ type: "eventLoop", busy } satisfies ToWorker);
    }, EVENT_LOOP_SAMPLE_MS).unref();
  }

  readonly modelId: string;
  readonly dims: number;
  /** Whether texts share inferences (the model's vectors do not depend on their batch). */
  readonly batchable: boolean;
  readonly calibration: ScoreCalibration;
  /** The model's whole words: what a request's slips are repaired against before it reads them. */
  readonly words: ModelWords;

  /** Loads the model in a new worker; rejects with the folder's problem (naming the file) if unusable. */
  static async open(modelDir: string, options: EmbedderOptions = {}): Promise<Embedder> {
    // The graph first: a folder that is not there says so by its first file, as the worker would.
    requireFile(modelDir, MODEL_FILES.onnx);
    // A search tokenizes a text for the model's pace and again for the static tier: once, kept.
    const tokenizer = readTokenizer(modelDir, 256);
    const probe = (text: string) => tokenizer.pieces(text, false);
    const workerData: WorkerSettings = {
      modelDir,
      threads: options.threads ?? availableParallelism(),
      probes: {
        batch: [probe("search the web for a query"), probe("ok")],
        pace: probe("list the open pull requests of a repository"),
      },
    };
    const worker = new Worker(workerEntry(import.meta.url, "embed-worker"), { workerData });
    const ready = await new Promise<Extract<FromWorker, { type: "ready" }>>((resolve, reject) => {
      worker.once("message", (message: FromWorker) => {
        if (message.type === "ready") resolve(message);
        else
          reject(
            new Error(message.type === "unusable" ? message.message : "the embedding worker failed to start"),
          );
      });
      worker.once("error", reject);
    }).catch(async (err: unknown) => {
      await worker.terminate();
      throw err;
    });
    let staticTier: StaticTier | undefined;
    try {
      staticTier = StaticTier.load(modelDir, tokenizer, ready);
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    return new Embedder(worker, ready, tokenizer, staticTier, {
      queryCacheSize: options.queryCacheSize ?? DEFAULTS.queryCacheSize,
      maxQueuedQueries: options.maxQueuedQueries ?? DEFAULTS.maxQueuedQueries,
    });
  }

  get idle(): boolean {
    return this.queuedQueries === 0 && !this.loopBusy;
  }

  /** Query texts searches wait for (or in an inference). */
  get queriesWaiting(): number {
    return this.queuedQueries;
  }

  /** Query texts of a typical request (32 padded tokens) the model embeds a second at its pace lately. */
  get capacity(): number {
    return this.msPerToken > 0 ? 1_000 / (this.msPerToken * 32) : 0;
  }

  embedQuery(text: string, deadline = Number.POSITIVE_INFINITY, need = 1): Promise<Float32Array> {
    const cached = this.queryCache.get(text);
    if (cached !== undefined) {
      if (cached.vector === undefined) this.hurry(cached.requestId, deadline, need);
      return cached.promise;
    }
    if (this.queuedQueries >= this.options.maxQueuedQueries)
      return Promise.reject(new EmbedderBusy(`${this.queuedQueries} query texts already wait for the model`));
    return this.cacheQuery(text, "query", deadline, need).promise;
  }

  embedLater(text: string): void {
    if (this.closed) return;
    const cached = this.queryCache.get(text);
    if (cached !== undefined) {
      if (cached.vector === undefined) this.askedAgain(cached.requestId);
      return;
    }
    // Dropped (the model's spare time holds enough) or failed: not cached, so asking again retries.
    this.cacheQuery(text, "later", 0, 0).promise.catch(() => {});
  }

  cachedQuery(text: string): Float32Array | undefined {
    return this.queryCache.get(text)?.vector;
  }

  expectedWaitMs(texts: readonly string[], need = 1): number {
    const now = Date.now();
    let ahead = 0;
    let other = 0;
    // `later` work runs in the model's spare time only: not while searches keep coming, and while the
    // event loop is busy only what was asked again.
    const spare = now - this.queryAt >= SPARE_AFTER_MS;
    for (const job of this.pending.values()) {
      if (job.kind === "query") {
        if (job.deadline > now && job.need >= need) ahead += job.tokens;
      } else if (job.kind === "background") other = UNIT_TOKENS;
      // A `later` inference is one text (BatchQueue).
      else if (spare && (!this.loopBusy || job.askedAgain === true)) other = Math.max(other, job.tokens);
    }
    // An inference of other work may be under way (a unit of it at most): on average the query waits
    // for half of it.
    const underWay = Math.min(other, UNIT_TOKENS) / 2;
    // While the event loop is busy, the model rests after each inference as long as it took: after
    // those ahead, not after this one's.
    const slowdown = this.loopBusy ? 1 + REST_WHILE_BUSY : 1;
    return this.msPerToken * (slowdown * (ahead + underWay) + this.tokensOf(texts));
  }

  async embedTexts(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const packed = await this.request(texts, "background", 0, 0).promise;
    return texts.map((_, i) => packed.slice(i * this.dims, (i + 1) * this.dims));
  }

  /**
   * Rejects whatever waits, then ends the worker once the inference under way has returned:
   * onnxruntime aborts the whole process when its thread is terminated mid-run.
   */
  async close(): Promise<void> {
    clearInterval(this.loopWatch);
    if (!this.closed) {
      this.fail(new Error("the embedder is closed"));
      this.worker.ref();
      this.worker.postMessage({ type: "stop" } satisfies ToWorker);
    }
    await this.stopped;
    await this.worker.terminate();
  }

  /** Padded tokens of `texts`, each its own row. */
  private tokensOf(texts: readonly string[]): number {
    let tokens = 0;
    for (const text of texts)
      tokens += paddedLength(this.tokenizer.pieces(text).length + 2, this.tokenizer.settings.maxTokens);
    return tokens;
  }

  private cacheQuery(text: string, kind: TextKind, deadline: number, need: number): CachedQuery {
    const { requestId, promise } = this.request([text], kind, deadline, need);
    const entry: CachedQuery = { promise, requestId };
    this.queryCache.set(text, entry);
    entry.promise.then(
      (vector) => {
        entry.vector = vector;
      },
      // A failed query is not cached, so asking again retries.
      () => {
        if (this.queryCache.get(text) === entry) this.queryCache.delete(text);
      },
    );
    return entry;
  }

  /**
   * A `later` query asked again by a search that did not wait for it: worth the model's time even
   * while the event loop is busy (BatchQueue.next).
   */
  private askedAgain(requestId: number): void {
    const job = this.pending.get(requestId);
    if (job === undefined || job.kind !== "later" || job.askedAgain) return;
    job.askedAgain = true;
    this.worker.postMessage({ type: "again", requestId } satisfies ToWorker);
  }

  /** A `later` query a search now waits for: the worker takes it among the queries. */
  private hurry(requestId: number, deadline: number, need: number): void {
    const job = this.pending.get(requestId);
    if (job === undefined || (job.kind === "query" && job.deadline >= deadline && job.need >= need)) return;
    if (job.kind !== "query") this.queuedQueries += job.texts;
    job.kind = "query";
    job.deadline = Math.max(job.deadline, deadline);
    job.need = Math.max(job.need, need);
    this.queryAt = Date.now();
    this.worker.postMessage({ type: "hurry", requestId, deadline, need } satisfies ToWorker);
  }

  private request(
    texts: readonly string[],
    kind: TextKind,
    deadline: number,
    need: number,
  ): { readonly requestId: number; readonly promise: Promise<Float32Array> } {
    const requestId = this.nextRequestId++;
    if (this.closed) return { requestId, promise: Promise.reject(new Error("the embedder is closed")) };
    const promise = new Promise<Float32Array>((resolve, reject) => {
      const tokens = kind === "background" ? 0 : this.tokensOf(texts);
      this.pending.set(requestId, { texts: texts.length, tokens, kind, deadline, need, resolve, reject });
      if (kind === "query") {
        this.queuedQueries += texts.length;
        this.queryAt = Date.now();
      }
      // Referenced while working, so a caller awaiting vectors keeps the process alive.
      this.worker.ref();
      // A search's texts were tokenized for its estimate and are kept; a catalog's are read once.
      const pieces = texts.map((text) => this.tokenizer.pieces(text, kind !== "background"));
      this.worker.postMessage({ type: "embed", requestId, pieces, kind, deadline, need } satisfies ToWorker);
    });
    return { requestId, promise };
  }

  private settle(message: FromWorker): void {
    if (message.type === "stopped") {
      this.markStopped();
      return;
    }
    if (message.type !== "vectors" && message.type !== "failed" && message.type !== "dropped") return;
    const job = this.pending.get(message.requestId);
    if (job === undefined) return;
    this.pending.delete(message.requestId);
    if (job.kind === "query") this.queuedQueries -= job.texts;
    if (this.pending.size === 0) this.worker.unref();
    if (message.type === "vectors") {
      this.msPerToken = message.msPerToken;
      job.resolve(message.vectors);
    } else if (message.type === "dropped")
      job.reject(new EmbedderBusy("too many texts wait for the model's spare time"));
    else job.reject(new Error(`embedding failed: ${message.message}`));
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    const pending = [...this.pending.values()];
    this.pending.clear();
    this.queuedQueries = 0;
    for (const job of pending) job.reject(err);
  }
}
