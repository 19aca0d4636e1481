import type { EncodedText } from "./model.ts";
import type { TextKind } from "./worker-protocol.ts";

/**
 * Tokens (rows × padded length) of one inference: a few short texts, one long one. Small, so a query
 * arriving while an inference runs waits little for it, and the first of many waiting queries are
 * answered within their wait; larger batches embed no more texts a second on a CPU.
 */
export const UNIT_TOKENS = 128;
/**
 * Tokens of an inference of texts no search waits for: one short request's. A search that arrives
 * while it runs waits for it, and one that arrives in the model's spare time comes when nobody else
 * has for a while: a search one at a time on a busy machine then waits for a short inference, not
 * a full one, and is read by the model the same way each time.
 */
const LATER_UNIT_TOKENS = 32;
/** Texts no search waits for, kept for the model's spare time at most; past it the oldest are dropped. */
export const LATER_TEXTS = 2_048;
/**
 * The model's spare time begins once no search has waited for it this long: while searches keep
 * coming, every inference goes to them, and a search never waits behind a text no one waits for.
 */
export const SPARE_AFTER_MS = 100;
/**
 * While the server's event loop is busy, the model rests this many times as long as each inference
 * took before the next, whatever the work: it works at most half the time, so the calls it serves
 * are answered too.
 * Measured with 32 callers at once (bench/meaning-quality.ts, bench/hybrid-load.ts): resting half as
 * long gave the held-out requests 0.003–0.006 more R@5 and took a third of the throughput.
 */
export const REST_WHILE_BUSY = 1;

/** Which `later` work the model may take (BatchQueue.next). */
export type LaterWork = "none" | "askedAgain" | "all";

/** A request's texts being embedded: vectors fill in as inferences finish. */
export interface QueuedRequest {
  readonly requestId: number;
  kind: TextKind;
  /** For a query: until when (Date.now) a search waits for it. */
  deadline: number;
  /** For a query: how much its search needs the model, in [0, 1]; queries of more need go first. */
  need: number;
  /** The texts' vectors, packed in request order (made when its first inference ends). */
  vectors: Float32Array | undefined;
  readonly encoded: readonly EncodedText[];
  /** Rows not embedded yet, in the order they go (by length for background requests). */
  readonly order: number[];
  /** Rows whose vector is still missing (taken ones included). */
  left: number;
  /** For `later` work: a search asked for it again meanwhile (BatchQueue.askedAgain). */
  askedAgain: boolean;
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
 * The worker's queue of texts to embed, taken an inference at a time, so the model's time goes where
 * someone waits: queries whose search still waits, together, those that need the model most first
 * (their words say least), else in the order they came; then, taking
 * turns, `later` texts (the latest first: a request asked during a burst is likeliest to come again soon)
 * and catalog texts (one request at a time, shortest first so each inference pads little). A query
 * whose search stopped waiting becomes `later` work. `later` work is bounded: past LATER_TEXTS the
 * oldest is dropped (its request is embedded when asked again).
 */
export class BatchQueue {
  private readonly queries: QueuedRequest[] = [];
  private readonly later: QueuedRequest[] = [];
  private readonly background: QueuedRequest[] = [];
  private laterTexts = 0;
  /** Whether the last unit not for a waiting query was `later` work (the two take turns). */
  private laterWent = false;

  constructor(private readonly shape: BatchShape) {}

  /**
   * Queues a request; `deadline`: for a query, until when its search waits (Date.now). Returns the
   * request, and the `later` requests dropped to keep that work bounded (to be answered as dropped).
   */
  add(
    requestId: number,
    encoded: readonly EncodedText[],
    kind: TextKind,
    deadline = Number.POSITIVE_INFINITY,
    need = 1,
  ): { readonly request: QueuedRequest; readonly dropped: QueuedRequest[] } {
    const order = encoded.map((_, row) => row);
    if (kind === "background")
      order.sort((a, b) => (encoded[a]?.ids.length ?? 0) - (encoded[b]?.ids.length ?? 0));
    const request: QueuedRequest = {
      requestId,
      kind,
      deadline,
      need,
      vectors: undefined,
      encoded,
      order,
      left: encoded.length,
      askedAgain: false,
      failed: false,
    };
    if (kind === "background") this.background.push(request);
    else if (kind === "query") this.queries.push(request);
    else this.toLater(request);
    return { request, dropped: this.bound() };
  }

  /**
   * A `later` request asked again by a search that did not wait for it: a request that comes back
   * is worth the model's time even while the server is busy (`next`), where one asked once is not.
   */
  askedAgain(requestId: number): void {
    const request = this.later.find((r) => r.requestId === requestId);
    if (request !== undefined) request.askedAgain = true;
  }

  /** A request a search now waits for until `deadline`, with its need: among the queries. */
  hurry(requestId: number, deadline: number, need: number): void {
    const waiting = this.queries.find((r) => r.requestId === requestId);
    if (waiting !== undefined) {
      waiting.deadline = Math.max(waiting.deadline, deadline);
      waiting.need = Math.max(waiting.need, need);
    }
    const at = this.later.findIndex((r) => r.requestId === requestId);
    const request = this.later[at];
    if (request === undefined) return;
    this.later.splice(at, 1);
    this.laterTexts -= request.order.length;
    request.kind = "query";
    request.deadline = deadline;
    request.need = need;
    this.queries.push(request);
  }

  /**
   * The next inference at time `now` (Date.now), or undefined when nothing waits. `later`: which
   * `later` work may go — none while searches keep coming (SPARE_AFTER_MS: it is kept), only what was
   * asked again while the server is busy, else all.
   */
  next(now = Date.now(), later: LaterWork = "all"): Unit | undefined {
    this.prune(now);
    if (this.queries.length > 0) {
      // The queries whose searches need the model most first; of equal need, the first come.
      this.queries.sort((a, b) => b.need - a.need || a.requestId - b.requestId);
      return this.take(this.queries, true);
    }
    const open = this.laterOpen(later);
    const laterFirst = open.length > 0 && (!this.laterWent || this.background.length === 0);
    if (laterFirst) {
      this.laterWent = true;
      const unit = this.take([...open].reverse(), true, LATER_UNIT_TOKENS);
      this.laterTexts -= unit?.rows.length ?? 0;
      return unit;
    }
    this.laterWent = false;
    // Background requests go one at a time: a batch of similar lengths.
    return this.background.length > 0 ? this.take(this.background.slice(0, 1), false) : undefined;
  }

  /** Stores a unit's vectors (packed in unit order); returns the requests it completed. */
  complete(unit: Unit, vectors: Float32Array): QueuedRequest[] {
    const { dims } = this.shape;
    const done: QueuedRequest[] = [];
    unit.rows.forEach(({ request, row }, i) => {
      request.vectors ??= new Float32Array(request.encoded.length * dims);
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
      if (request.kind === "later") this.laterTexts -= request.order.length;
      request.failed = true;
      request.order.length = 0;
    }
    return failed;
  }

  /** Whether `later` work waits that `next` would take, given `later`. */
  laterWaiting(later: LaterWork): boolean {
    return this.laterOpen(later).length > 0;
  }

  /** Drops everything waiting. */
  clear(): void {
    for (const queue of [this.queries, this.later, this.background]) queue.length = 0;
    this.laterTexts = 0;
  }

  /** Rows of `requests`, in order, up to a unit's tokens (one row when texts may not share). */
  private take(
    requests: readonly QueuedRequest[],
    acrossRequests: boolean,
    unitTokens = UNIT_TOKENS,
  ): Unit | undefined {
    const rows: { request: QueuedRequest; row: number }[] = [];
    let longest = 0;
    for (const request of requests) {
      while (request.order.length > 0) {
        const row = request.order[0] as number;
        const tokens = request.encoded[row]?.ids.length ?? 0;
        const length = this.shape.paddedLength(Math.max(longest, tokens));
        const full = rows.length > 0 && (!this.shape.batchable || (rows.length + 1) * length > unitTokens);
        if (full) return this.unit(rows, longest);
        request.order.shift();
        rows.push({ request, row });
        longest = Math.max(longest, tokens);
      }
      if (!acrossRequests) break;
    }
    return rows.length === 0 ? undefined : this.unit(rows, longest);
  }

  private unit(rows: { request: QueuedRequest; row: number }[], longest: number): Unit {
    const length = this.shape.batchable ? this.shape.paddedLength(longest) : longest;
    return { rows, length };
  }

  private laterOpen(later: LaterWork): readonly QueuedRequest[] {
    if (later === "all") return this.later;
    return later === "none" ? [] : this.later.filter((r) => r.askedAgain);
  }

  private toLater(request: QueuedRequest): void {
    request.kind = "later";
    this.later.push(request);
    this.laterTexts += request.order.length;
  }

  /**
   * Queries whose search stopped waiting become `later` work; requests with nothing left to take leave
   * their queue (the units holding their last rows keep them).
   */
  private prune(now: number): void {
    const waited = this.queries.filter((r) => r.order.length > 0);
    this.queries.length = 0;
    for (const request of waited) {
      if (request.deadline > now) this.queries.push(request);
      else this.toLater(request);
    }
    for (const queue of [this.later, this.background]) {
      const kept = queue.filter((r) => r.order.length > 0);
      queue.splice(0, queue.length, ...kept);
    }
  }

  /** The oldest `later` requests not started yet, dropped until the rest fit LATER_TEXTS. */
  private bound(): QueuedRequest[] {
    const dropped: QueuedRequest[] = [];
    while (this.laterTexts > LATER_TEXTS) {
      const oldest = this.later.findIndex((r) => r.order.length === r.encoded.length);
      const request = this.later[oldest];
      if (request === undefined) break;
      this.later.splice(oldest, 1);
      this.laterTexts -= request.order.length;
      request.order.length = 0;
      request.failed = true;
      dropped.push(request);
    }
    return dropped;
  }
}
