/** Messages between the embedder (main thread) and embed-worker.ts. */
export interface EmbedRequest {
  readonly requestId: number;
  readonly texts: readonly string[];
}

export type EmbedResponse =
  | { readonly type: "vectors"; readonly requestId: number; readonly vectors: Float32Array }
  | { readonly type: "failed"; readonly requestId: number; readonly message: string };

export type WorkerMessage =
  | { readonly type: "ready"; readonly modelId: string; readonly dims: number }
  | { readonly type: "unusable"; readonly message: string }
  | EmbedResponse;
