import type { Db } from "../database/sqlite.ts";
import { afterCommit, inWriteTransaction } from "../database/transaction.ts";
import type { EventLog, EventSink, NewEvent } from "../events/index.ts";
import type { Replica } from "./replica.ts";
import { EVENTS_KIND, type ReplicatedWrite } from "./writes.ts";

type EventsPayload = { readonly events: readonly NewEvent[] };

/**
 * The event sink of a replica (docs/replicas.md "Events"): one log, one id order, for the whole fleet.
 * Every event reaches the local event log only through the change log, so every replica stores the
 * same events under the same ids and a resume cursor works on any of them:
 * - emitted while a change is applied (a usage record's `usage_recorded`), it is part of that change
 *   on every replica, committed with it, stamped with the change's time;
 * - emitted anywhere else (reports of searches and reads, a change not replicated yet), it is queued
 *   and appended with the others of its event-loop turn as one `events` change (after the local
 *   commit when emitted inside a local write, so a rolled-back change reports nothing).
 */
export class ReplicatedEvents implements EventSink {
  private readonly log: EventLog;
  private readonly db: Db;
  private readonly replica: Replica;
  private readonly onError: (error: unknown) => void;
  private pending: NewEvent[] = [];
  private flushScheduled: NodeJS.Immediate | undefined;
  /** The change kind that carries reported events; every replica applies it. */
  readonly write: ReplicatedWrite<EventsPayload, void>;

  constructor(log: EventLog, db: Db, replica: Replica, onError: (error: unknown) => void) {
    this.log = log;
    this.db = db;
    this.replica = replica;
    this.onError = onError;
    this.write = {
      kind: EVENTS_KIND,
      // Applied by a replica's follower, so `applying` is this change: its time, and who reported it.
      apply: (payload) => {
        const applying = replica.applying;
        for (const event of payload.events) log.emit(event, applying);
      },
    };
  }

  emit(event: NewEvent): void {
    const applying = this.replica.applying;
    if (applying) this.log.emit(event, applying);
    else if (inWriteTransaction(this.db)) afterCommit(this.db, () => this.queue(event));
    else this.queue(event);
  }

  private queue(event: NewEvent): void {
    this.pending.push(event);
    this.flushScheduled ??= setImmediate(() => this.flush());
  }

  /** Appends the queued reports now (the server calls it when it stops). */
  flush(): void {
    clearImmediate(this.flushScheduled);
    this.flushScheduled = undefined;
    if (this.pending.length === 0) return;
    const events = this.pending;
    this.pending = [];
    // A report lost with the database costs that report only; the sink never throws into a call.
    this.replica.write(this.write, { events }).catch(this.onError);
  }
}
