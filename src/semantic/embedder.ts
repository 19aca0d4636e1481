import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { LruCache } from "../lru.ts";
import { workerEntry } from "../worker-entry.ts";
import type { FromWorker, ToWorker, WorkerSettings } from "./worker-protocol.ts";

/** What the vector store needs from a model: who it is, its dimension, and vectors for texts. */
export interface TextEmbedder {
  readonly modelId: string;
  readonly dims: number;
  /** One L2-normalised vector per text, in the background (after every waiting query). */
  embedTexts(texts: readonly string[]): Promise<Float32Array[]>;
}

/** What a search needs: a request's vector, soon. */
export interface QueryEmbedder extends TextEmbedder {
  /**
   * Ahead of every text no search waits for; `waitMs`: how long the caller waits (it goes before the
   * texts of searches that stopped waiting). Rejects with EmbedderBusy, at once, when too many query
   * texts already wait.
   */
  embedQuery(text: string, waitMs?: number): Promise<Float32Array>;
  /** The query's vector if it is cached and computed (no promise, no wait), else undefined. */
  cachedQuery(text: string): Float32Array | undefined;
  /**
   * How long a query asked now would wait for the model, by the query texts ahead of it that searches
   * still wait for and the time the model takes per query text lately (0 before it has taken any).
   */
  expectedWaitMs(): number;
}

/** The embedder refused a query because too many wait already: the search answers by words. */
export class EmbedderBusy extends Error {
  override readonly name = "EmbedderBusy";
}

export interface EmbedderOptions {
  /** Threads of inference (config tool_search.semantic.threads); default the machine's cores. */
  readonly threads?: number;
  /** Query vectors kept (384 floats each: 1.5 KiB). */
  readonly queryCacheSize?: number;
  /** Query texts waiting or being embedded at most; past it, embedQuery refuses (EmbedderBusy). */
  readonly maxQueuedQueries?: number;
}

const DEFAULTS = { queryCacheSize: 1_000, maxQueuedQueries: 256 } as const;

interface Pending {
  readonly texts: number;
  readonly urgent: boolean;
  /** For a query: until when (Date.now) its search waits for it. */
  readonly waitedUntil: number;
  readonly resolve: (vectors: Float32Array) => void;
  readonly reject: (err: Error) => void;
}

/**
 * Sentence embeddings from a model folder, computed in a worker thread that owns the ONNX session
 * (as many inference threads as configured). Every text goes to the worker at once; there, waiting
 * queries go before tool texts and are embedded together, in inferences padded to a few fixed
 * lengths (embed-worker.ts, batches.ts). A model whose vectors would depend on their batch is run one
 * text per inference (SentenceModel.batchable). Query vectors are cached, least recently used out;
 * when too many query texts wait, new ones are refused at once rather than queued behind them.
 */
export class Embedder implements QueryEmbedder {
  private readonly pending = new Map<number, Pending>();
  private nextRequestId = 1;
  private queuedQueries = 0;
  /** The model's time per query text lately (the worker's running average, with each answer). */
  private msPerQueryText = 0;
  private closed = false;
  /** Settles when the worker has stopped (answered `stop`) or ended. */
  private stopped: Promise<void>;
  private markStopped = () => {};
  /** Query vectors by text: the promise, and the vector once it came. */
  private readonly queryCache: LruCache<string, { promise: Promise<Float32Array>; vector?: Float32Array }>;

  private constructor(
    private readonly worker: Worker,
    readonly modelId: string,
    readonly dims: number,
    /** Whether texts share inferences (the model's vectors do not depend on their batch). */
    readonly batchable: boolean,
    private readonly options: Required<Pick<EmbedderOptions, "queryCacheSize" | "maxQueuedQueries">>,
  ) {
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
  }

  /** Loads the model in a new worker; rejects with the folder's problem (naming the file) if unusable. */
  static async open(modelDir: string, options: EmbedderOptions = {}): Promise<Embedder> {
    const workerData: WorkerSettings = { modelDir, threads: options.threads ?? availableParallelism() };
    const worker = new Worker(workerEntry(import.meta.url, "embed-worker"), { workerData });
    const ready = await new Promise<{ modelId: string; dims: number; batchable: boolean }>(
      (resolve, reject) => {
        worker.once("message", (message: FromWorker) => {
          if (message.type === "ready") resolve(message);
          else
            reject(
              new Error(
                message.type === "unusable" ? message.message : "the embedding worker failed to start",
              ),
            );
        });
        worker.once("error", reject);
      },
    ).catch(async (err: unknown) => {
      await worker.terminate();
      throw err;
    });
    return new Embedder(worker, ready.modelId, ready.dims, ready.batchable, {
      queryCacheSize: options.queryCacheSize ?? DEFAULTS.queryCacheSize,
      maxQueuedQueries: options.maxQueuedQueries ?? DEFAULTS.maxQueuedQueries,
    });
  }

  /** Query texts waiting for (or in) an inference. */
  get queriesWaiting(): number {
    return this.queuedQueries;
  }

  /** The query's vector: from the cache when asked before, else embedded ahead of any tool text. */
  embedQuery(text: string, waitMs = Number.POSITIVE_INFINITY): Promise<Float32Array> {
    const cached = this.queryCache.get(text);
    if (cached !== undefined) return cached.promise;
    if (this.queuedQueries >= this.options.maxQueuedQueries)
      return Promise.reject(new EmbedderBusy(`${this.queuedQueries} query texts already wait for the model`));
    const entry: { promise: Promise<Float32Array>; vector?: Float32Array } = {
      promise: this.request([text], Date.now() + waitMs),
    };
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
    return entry.promise;
  }

  cachedQuery(text: string): Float32Array | undefined {
    return this.queryCache.get(text)?.vector;
  }

  expectedWaitMs(): number {
    const now = Date.now();
    let ahead = 0;
    for (const job of this.pending.values()) if (job.urgent && job.waitedUntil > now) ahead += job.texts;
    return ahead * this.msPerQueryText;
  }

  async embedTexts(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const packed = await this.request(texts, undefined);
    return texts.map((_, i) => packed.slice(i * this.dims, (i + 1) * this.dims));
  }

  /**
   * Rejects whatever waits, then ends the worker once the inference under way has returned:
   * onnxruntime aborts the whole process when its thread is terminated mid-run.
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.fail(new Error("the embedder is closed"));
      this.worker.ref();
      this.worker.postMessage({ type: "stop" } satisfies ToWorker);
    }
    await this.stopped;
    await this.worker.terminate();
  }

  /** `waitedUntil`: a query's deadline (Date.now; Infinity = none); undefined = background work. */
  private request(texts: readonly string[], waitedUntil: number | undefined): Promise<Float32Array> {
    if (this.closed) return Promise.reject(new Error("the embedder is closed"));
    const urgent = waitedUntil !== undefined;
    return new Promise((resolve, reject) => {
      const requestId = this.nextRequestId++;
      this.pending.set(requestId, {
        texts: texts.length,
        urgent,
        waitedUntil: waitedUntil ?? 0,
        resolve,
        reject,
      });
      if (urgent) this.queuedQueries += texts.length;
      // Referenced while working, so a caller awaiting vectors keeps the process alive.
      this.worker.ref();
      this.worker.postMessage({
        type: "embed",
        requestId,
        texts,
        urgent,
        waitedUntil: waitedUntil ?? 0,
      } satisfies ToWorker);
    });
  }

  private settle(message: FromWorker): void {
    if (message.type === "stopped") {
      this.markStopped();
      return;
    }
    if (message.type !== "vectors" && message.type !== "failed") return;
    const job = this.pending.get(message.requestId);
    if (job === undefined) return;
    this.pending.delete(message.requestId);
    if (job.urgent) this.queuedQueries -= job.texts;
    if (this.pending.size === 0) this.worker.unref();
    if (message.type === "vectors") {
      if (message.msPerQueryText > 0) this.msPerQueryText = message.msPerQueryText;
      job.resolve(message.vectors);
    } else job.reject(new Error(`embedding failed: ${message.message}`));
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
