/** Messages between the embedder (main thread) and embed-worker.ts. */

/** What the worker is started with (its workerData). */
export interface WorkerSettings {
  readonly modelDir: string;
  /** Threads of the ONNX session (config tool_search.semantic.threads). */
  readonly threads: number;
}

export type ToWorker =
  /**
   * `urgent`: a request waits for it (queries), so it goes before background work (tool texts);
   * `waitedUntil`: until when (Date.now) that request waits, after which it yields to those still waiting.
   */
  | {
      readonly type: "embed";
      readonly requestId: number;
      readonly texts: readonly string[];
      readonly urgent: boolean;
      readonly waitedUntil: number;
    }
  /** Finish the inference under way, drop the rest, answer `stopped`. */
  | { readonly type: "stop" };

export type FromWorker =
  | {
      readonly type: "ready";
      readonly modelId: string;
      readonly dims: number;
      /** Whether texts share inferences (SentenceModel.batchable). */
      readonly batchable: boolean;
    }
  | { readonly type: "unusable"; readonly message: string }
  | { readonly type: "stopped" }
  | {
      readonly type: "vectors";
      readonly requestId: number;
      readonly vectors: Float32Array;
      /** The worker's running average of inference time per query text, in ms (0: none taken yet). */
      readonly msPerQueryText: number;
    }
  | { readonly type: "failed"; readonly requestId: number; readonly message: string };
