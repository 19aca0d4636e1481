import type { EventType, StoredEvent } from "./event.ts";

export interface SubscribeOptions {
  /** Only these types; undefined or empty = all. */
  readonly types?: readonly EventType[];
  /**
   * Only events of this tenant. Undefined = every tenant (operators only). A string is an exact match,
   * so "" sees only events emitted without a tenant.
   */
  readonly tenantId?: string;
  /** Only events of this session; same matching as tenantId. */
  readonly sessionId?: string;
  /** Only events naming this tool (attribute `tool`, as tool_activated has); undefined = any. */
  readonly tool?: string;
  /**
   * Resume cursor: deliver retained events with id > afterId, then live ones. Undefined = only events
   * emitted from now on; 0n = everything retained.
   */
  readonly afterId?: bigint;
  readonly signal: AbortSignal;
  /** Called when retention already deleted events after the cursor; delivery resumes after `resumedAfterId`. */
  readonly onGap?: (gap: EventGap) => void;
}

/** Events with ids in (afterId, resumedAfterId] were deleted by retention before delivery; some may have matched. */
export interface EventGap {
  readonly afterId: bigint;
  readonly resumedAfterId: bigint;
}

export interface EventSubscription extends AsyncIterable<StoredEvent> {
  /** Times retention skipped events this subscriber had not yet received. */
  readonly gaps: number;
  /** Times the live queue overflowed and the subscriber fell back to reading SQLite. */
  readonly overflows: number;
  /** Id of the last event delivered (or the starting cursor). */
  readonly cursor: bigint;
}

export interface Filter {
  readonly types: readonly EventType[] | undefined;
  readonly typeSet: ReadonlySet<EventType> | undefined;
  readonly tenantId: string | undefined;
  readonly sessionId: string | undefined;
  readonly tool: string | undefined;
}

/** What a subscription reads from its log: retained pages, the retention floor, and its own removal. */
export interface SubscriptionSource {
  /** Id of the newest event: where a subscription without a cursor starts. */
  readonly latestId: bigint;
  readonly pageLimit: number;
  retentionFloor(): bigint;
  readPage(filter: Filter, afterId: bigint, limit: number): StoredEvent[];
  unsubscribe(sub: Subscription): void;
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * One consumer. State machine: `live = false` → it reads SQLite pages after `cursor`; the read that
 * comes back short flips `live = true` in the same tick, and from then on emit() pushes into `queue`.
 * If the queue overflows, it is dropped and the subscriber goes back to reading SQLite from `cursor`
 * (the last event it delivered), so it misses nothing still retained and never holds more than
 * `queueLimit` events in memory.
 */
export class Subscription implements EventSubscription, AsyncIterator<StoredEvent> {
  gaps = 0;
  overflows = 0;
  cursor: bigint;
  private readonly filter: Filter;
  private queue: StoredEvent[] = [];
  private head = 0;
  private live: boolean;
  private ended = false;
  private readonly waiters: ((result: IteratorResult<StoredEvent>) => void)[] = [];
  private readonly onAbort = () => this.end();

  constructor(
    private readonly log: SubscriptionSource,
    private readonly options: SubscribeOptions,
    private readonly queueLimit: number,
  ) {
    const types = options.types && options.types.length > 0 ? [...new Set(options.types)] : undefined;
    this.filter = {
      types,
      typeSet: types ? new Set(types) : undefined,
      tenantId: options.tenantId,
      sessionId: options.sessionId,
      tool: options.tool,
    };
    // No cursor: start at the newest event and go live at once, nothing to replay.
    this.cursor = options.afterId ?? log.latestId;
    this.live = options.afterId === undefined;
    if (options.signal.aborted) this.ended = true;
    else options.signal.addEventListener("abort", this.onAbort, { once: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<StoredEvent> {
    return this;
  }

  next(): Promise<IteratorResult<StoredEvent>> {
    if (this.ended) return Promise.resolve(DONE);
    if (this.waiters.length === 0) {
      try {
        const event = this.take();
        if (event) return Promise.resolve({ done: false, value: event });
      } catch (err) {
        this.end();
        return Promise.reject(err);
      }
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  return(): Promise<IteratorResult<StoredEvent>> {
    this.end();
    return Promise.resolve(DONE);
  }

  /** Called by emit() for every new event, synchronously; O(1) and never blocks. */
  offer(event: StoredEvent): void {
    if (!this.live || this.ended || !this.matches(event)) return;
    const waiter = this.head >= this.queue.length ? this.waiters.shift() : undefined;
    if (waiter) {
      this.cursor = event.id;
      waiter({ done: false, value: event });
      return;
    }
    if (this.queue.length - this.head >= this.queueLimit) {
      // Too slow: forget the queue and catch up from SQLite later, from the last delivered id.
      this.queue = [];
      this.head = 0;
      this.live = false;
      this.overflows++;
      return;
    }
    this.queue.push(event);
  }

  end(): void {
    if (this.ended && this.waiters.length === 0) return;
    this.ended = true;
    this.queue = [];
    this.head = 0;
    this.log.unsubscribe(this);
    this.options.signal.removeEventListener("abort", this.onAbort);
    for (const waiter of this.waiters.splice(0)) waiter(DONE);
  }

  private take(): StoredEvent | undefined {
    for (;;) {
      if (this.head < this.queue.length) {
        const event = this.queue[this.head++] as StoredEvent;
        if (this.head === this.queue.length) {
          this.queue = [];
          this.head = 0;
        } else if (this.head >= 1024) {
          // Reclaim the consumed prefix of a queue that never fully drains.
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
        this.cursor = event.id;
        return event;
      }
      if (this.live) return undefined;
      this.fill();
    }
  }

  /** Reads the next page from SQLite; a short page means caught up, so go live in this same tick. */
  private fill(): void {
    const floor = this.log.retentionFloor();
    if (this.cursor < floor) {
      const gap = { afterId: this.cursor, resumedAfterId: floor };
      this.gaps++;
      this.cursor = floor;
      this.options.onGap?.(gap);
    }
    const limit = Math.min(this.log.pageLimit, this.queueLimit);
    const page = this.log.readPage(this.filter, this.cursor, limit);
    this.queue = page;
    this.head = 0;
    if (page.length < limit) this.live = true;
  }

  private matches(event: StoredEvent): boolean {
    const f = this.filter;
    if (f.typeSet && !f.typeSet.has(event.type)) return false;
    if (f.tenantId !== undefined && (event.tenantId ?? "") !== f.tenantId) return false;
    if (f.sessionId !== undefined && (event.sessionId ?? "") !== f.sessionId) return false;
    if (f.tool !== undefined && event.attributes.tool !== f.tool) return false;
    return true;
  }
}
