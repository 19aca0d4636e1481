import { Worker } from "node:worker_threads";
import { workerEntry } from "../worker-entry.ts";
import type { EmbedRequest, WorkerMessage } from "./worker-protocol.ts";

/** What the vector store needs from a model: who it is, its dimension, and vectors for texts. */
export interface TextEmbedder {
  readonly modelId: string;
  readonly dims: number;
  /** One L2-normalised vector per text, each embedded alone (see Embedder). */
  embedTexts(texts: readonly string[]): Promise<Float32Array[]>;
}

/** Query vectors kept (384 floats each: 1.5 KiB, so 1,000 cost 1.5 MB). */
const QUERY_CACHE_SIZE = 1_000;

interface Job {
  readonly text: string;
  readonly resolve: (vectors: Float32Array) => void;
  readonly reject: (err: Error) => void;
}

/**
 * Sentence embeddings from a model folder, computed in a worker thread that owns the ONNX session.
 * Every text is its own inference, tools' and queries' alike: the int8 model's vectors depend on what
 * else shares a batch, so only alone is a text's vector the same whenever and beside whatever it is
 * embedded; and on one thread batches bought no speed (a batch is as slow as its longest text times
 * its size) while each batch's buffers fragmented the worker's malloc arena for good. One request is
 * in flight at a time; a waiting query goes before waiting tool texts, so a search waits for at most
 * one text. Query vectors are cached, least recently used out.
 */
export class Embedder implements TextEmbedder {
  private readonly queries: Job[] = [];
  private readonly texts: Job[] = [];
  private inFlight: { readonly requestId: number; readonly job: Job } | undefined;
  /** Settles when the worker has answered its last request (or ended), even one nobody waits for now. */
  private workerIdle: Promise<void> = Promise.resolve();
  private markWorkerIdle = () => {};
  private nextRequestId = 1;
  private closed = false;
  private readonly queryCache = new Map<string, Promise<Float32Array>>();

  private constructor(
    private readonly worker: Worker,
    readonly modelId: string,
    readonly dims: number,
    private readonly queryCacheSize: number,
  ) {
    worker.on("message", (message: WorkerMessage) => {
      this.markWorkerIdle();
      this.settle(message);
    });
    worker.on("error", (err) => {
      this.markWorkerIdle();
      this.fail(err);
    });
    worker.on("exit", (code) => {
      this.markWorkerIdle();
      this.fail(new Error(`the embedding worker exited (code ${code})`));
    });
    worker.unref();
  }

  /** Loads the model in a new worker; rejects with the folder's problem (naming the file) if unusable. */
  static async open(modelDir: string, queryCacheSize = QUERY_CACHE_SIZE): Promise<Embedder> {
    const worker = new Worker(workerEntry(import.meta.url, "embed-worker"), { workerData: modelDir });
    const ready = await new Promise<{ modelId: string; dims: number }>((resolve, reject) => {
      worker.once("message", (message: WorkerMessage) => {
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
    return new Embedder(worker, ready.modelId, ready.dims, queryCacheSize);
  }

  /** The query's vector: embedded alone, from the cache when asked before. */
  embedQuery(text: string): Promise<Float32Array> {
    const cached = this.queryCache.get(text);
    if (cached !== undefined) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.queryCache.delete(text);
      this.queryCache.set(text, cached);
      return cached;
    }
    const vector = this.enqueue(this.queries, text);
    this.queryCache.set(text, vector);
    // A failed query is not cached, so asking again retries.
    vector.catch(() => this.queryCache.delete(text));
    for (const oldest of this.queryCache.keys()) {
      if (this.queryCache.size <= this.queryCacheSize) break;
      this.queryCache.delete(oldest);
    }
    return vector;
  }

  embedTexts(texts: readonly string[]): Promise<Float32Array[]> {
    return Promise.all(texts.map((text) => this.enqueue(this.texts, text)));
  }

  /**
   * Rejects whatever waits, then ends the worker once the inference under way (one text: milliseconds)
   * has returned: onnxruntime aborts the whole process when its thread is terminated mid-run.
   */
  async close(): Promise<void> {
    this.fail(new Error("the embedder is closed"));
    await this.workerIdle;
    await this.worker.terminate();
  }

  private enqueue(queue: Job[], text: string): Promise<Float32Array> {
    if (this.closed) return Promise.reject(new Error("the embedder is closed"));
    return new Promise((resolve, reject) => {
      queue.push({ text, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    if (this.inFlight !== undefined) return;
    const job = this.queries.shift() ?? this.texts.shift();
    if (job === undefined) {
      this.worker.unref();
      return;
    }
    // Referenced while working, so a caller awaiting vectors keeps the process alive.
    this.worker.ref();
    const requestId = this.nextRequestId++;
    this.inFlight = { requestId, job };
    this.workerIdle = new Promise((resolve) => {
      this.markWorkerIdle = resolve;
    });
    const request: EmbedRequest = { requestId, texts: [job.text] };
    this.worker.postMessage(request);
  }

  private settle(message: WorkerMessage): void {
    if (
      this.inFlight === undefined ||
      !("requestId" in message) ||
      message.requestId !== this.inFlight.requestId
    )
      return;
    const { job } = this.inFlight;
    this.inFlight = undefined;
    if (message.type === "vectors") job.resolve(message.vectors);
    else job.reject(new Error(`embedding failed: ${message.message}`));
    this.dispatch();
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    const pending = [this.inFlight?.job, ...this.queries.splice(0), ...this.texts.splice(0)];
    this.inFlight = undefined;
    for (const job of pending) job?.reject(err);
  }
}
