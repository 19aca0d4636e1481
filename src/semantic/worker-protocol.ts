/** Messages between the embedder (main thread) and embed-worker.ts. */

import type { ScoreCalibration } from "./calibration.ts";
import type { BatchProbes } from "./model.ts";

/** What the worker is started with (its workerData). */
export interface WorkerSettings {
  readonly modelDir: string;
  /** Threads of the ONNX session (config tool_search.semantic.threads). */
  readonly threads: number;
  /**
   * Word pieces the worker probes the model with at load (it has no tokenizer: texts are tokenized on
   * the main thread): two texts to tell whether vectors depend on their batch, one request for a
   * first pace.
   */
  readonly probes: { readonly batch: BatchProbes; readonly pace: readonly number[] };
}

/**
 * Who waits for a text: `query` — a search, until its deadline; `later` — nobody (a request's text
 * whose search answered without the model: embedded when the model has time, so the same request is
 * read by the model next time); `background` — the catalog's texts.
 */
export type TextKind = "query" | "later" | "background";

export type ToWorker =
  /**
   * `deadline`: for a query, until when (Date.now) its search waits; after it the query is `later`
   * work. `need`: for a query, how much its search needs the model, in [0, 1] (queries of more need go
   * first). `pieces`: each text's word pieces (FolderTokenizer.pieces).
   */
  | {
      readonly type: "embed";
      readonly requestId: number;
      readonly pieces: readonly (readonly number[])[];
      readonly kind: TextKind;
      readonly deadline: number;
      readonly need: number;
    }
  /** A `later` request asked again by a search that did not wait for it (BatchQueue.askedAgain). */
  | { readonly type: "again"; readonly requestId: number }
  /** A request asked again by a search that waits for it until `deadline`. */
  | { readonly type: "hurry"; readonly requestId: number; readonly deadline: number; readonly need: number }
  /**
   * Whether the server's event loop is busy: `later` work waits while it is, so the model's spare time
   * is the machine's, not CPU the calls need.
   */
  | { readonly type: "eventLoop"; readonly busy: boolean }
  /** Finish the inference under way, drop the rest, answer `stopped`. */
  | { readonly type: "stop" };

export type FromWorker =
  | {
      readonly type: "ready";
      readonly modelId: string;
      /** The ONNX file's sha256 (SentenceModel.sha256). */
      readonly sha256: string;
      readonly dims: number;
      /** Whether texts share inferences (SentenceModel.batchable). */
      readonly batchable: boolean;
      /** How the model's cosines become scores (SentenceModel.calibration). */
      readonly calibration: ScoreCalibration;
      /** The model's pace from the inferences of its start (Pace.msPerToken). */
      readonly msPerToken: number;
    }
  | { readonly type: "unusable"; readonly message: string }
  | { readonly type: "stopped" }
  | {
      readonly type: "vectors";
      readonly requestId: number;
      readonly vectors: Float32Array;
      /** The model's pace lately (Pace.msPerToken). */
      readonly msPerToken: number;
    }
  | { readonly type: "failed"; readonly requestId: number; readonly message: string }
  /** A `later` request left out: more texts wait for the model's spare time than it keeps. */
  | { readonly type: "dropped"; readonly requestId: number };
