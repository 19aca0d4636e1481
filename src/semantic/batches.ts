import type { EncodedText } from "./model.ts";

/**
 * Tokens (rows × padded length) of one inference for urgent texts: queries waiting, taken together. A
 * few at a time, so the first of many waiting are answered within their wait.
 */
const URGENT_TOKENS = 1_024;
/**
 * Tokens of one background inference: small, so a query arriving meanwhile waits little for the
 * inference under way before its own goes next.
 */
const BACKGROUND_TOKENS = 512;
/** Texts of one inference at most, however short. */
const MAX_ROWS = 32;

/** A request's texts being embedded: vectors fill in as inferences finish. */
export interface QueuedRequest {
  readonly requestId: number;
  readonly urgent: boolean;
  /** Until when (Date.now) a search waits for it; Infinity = as long as it takes. */
  readonly waitedUntil: number;
  /** The texts' vectors, packed in request order. */
  readonly vectors: Float32Array;
  readonly encoded: readonly EncodedText[];
  /** Rows not embedded yet, in the order they go (by length for background requests). */
  readonly order: number[];
  /** Rows whose vector is still missing (taken ones included). */
  left: number;
  failed: boolean;
}

/** One inference: texts of one or more requests, padded to `length` tokens. */
export interface Unit {
  readonly rows: readonly { readonly request: QueuedRequest; readonly row: number }[];
  readonly length: number;
}

export interface BatchShape {
  readonly dims: number;
  /** Whether texts may share an inference (SentenceModel.batchable): if not, a unit is one text. */
  readonly batchable: boolean;
  /** The padded length for the longest text of a unit (SentenceModel.paddedLength). */
  paddedLength(longest: number): number;
}

/**
 * The worker's queue of texts to embed, taken an inference at a time: urgent texts that a search still
 * waits for first, then urgent ones whose search gave up waiting (embedded for the next time it is
 * asked), then background texts. Urgent texts of different requests go together (what arrived while
 * the last inference ran); background texts one request at a time, shortest first so each inference
 * pads little.
 */
export class BatchQueue {
  private readonly urgent: QueuedRequest[] = [];
  private readonly background: QueuedRequest[] = [];

  constructor(private readonly shape: BatchShape) {}

  /** `waitedUntil`: for an urgent request, until when its search waits (Date.now); ignored otherwise. */
  add(
    requestId: number,
    encoded: readonly EncodedText[],
    urgent: boolean,
    waitedUntil = Infinity,
  ): QueuedRequest {
    const order = encoded.map((_, row) => row);
    if (!urgent) order.sort((a, b) => (encoded[a]?.ids.length ?? 0) - (encoded[b]?.ids.length ?? 0));
    const request: QueuedRequest = {
      requestId,
      urgent,
      waitedUntil,
      vectors: new Float32Array(encoded.length * this.shape.dims),
      encoded,
      order,
      left: encoded.length,
      failed: false,
    };
    (urgent ? this.urgent : this.background).push(request);
    return request;
  }

  /** The next inference at time `now` (Date.now), or undefined when nothing waits. */
  next(now = Date.now()): Unit | undefined {
    this.prune();
    const waited = this.urgent.filter((r) => r.waitedUntil > now);
    const queue = waited.length > 0 ? waited : this.urgent.length > 0 ? this.urgent : this.background;
    const budget = queue === this.background ? BACKGROUND_TOKENS : URGENT_TOKENS;
    const rows: { request: QueuedRequest; row: number }[] = [];
    let longest = 0;
    for (const request of queue) {
      while (request.order.length > 0) {
        const row = request.order[0] as number;
        const tokens = request.encoded[row]?.ids.length ?? 0;
        const length = this.shape.paddedLength(Math.max(longest, tokens));
        const full =
          rows.length > 0 &&
          (!this.shape.batchable || rows.length >= MAX_ROWS || (rows.length + 1) * length > budget);
        if (full) return this.unit(rows, longest);
        request.order.shift();
        rows.push({ request, row });
        longest = Math.max(longest, tokens);
      }
      // Background requests go one at a time: a batch of similar lengths.
      if (queue === this.background) break;
    }
    return rows.length === 0 ? undefined : this.unit(rows, longest);
  }

  /** Stores a unit's vectors (packed in unit order); returns the requests it completed. */
  complete(unit: Unit, vectors: Float32Array): QueuedRequest[] {
    const { dims } = this.shape;
    const done: QueuedRequest[] = [];
    unit.rows.forEach(({ request, row }, i) => {
      request.vectors.set(vectors.subarray(i * dims, (i + 1) * dims), row * dims);
      request.left--;
      if (request.left === 0 && !request.failed) done.push(request);
    });
    return done;
  }

  /** The requests of a failed unit fail whole (their other rows are not embedded); returns them, each once. */
  fail(unit: Unit): QueuedRequest[] {
    const failed = [...new Set(unit.rows.map((r) => r.request))].filter((r) => !r.failed);
    for (const request of failed) {
      request.failed = true;
      request.order.length = 0;
    }
    return failed;
  }

  /** Drops everything waiting. */
  clear(): void {
    this.urgent.length = 0;
    this.background.length = 0;
  }

  private unit(rows: { request: QueuedRequest; row: number }[], longest: number): Unit {
    const length = this.shape.batchable ? this.shape.paddedLength(longest) : longest;
    return { rows, length };
  }

  /** Requests with nothing left to take leave their queue (the units holding their last rows keep them). */
  private prune(): void {
    for (const queue of [this.urgent, this.background]) {
      const kept = queue.filter((r) => r.order.length > 0);
      queue.splice(0, queue.length, ...kept);
    }
  }
}
