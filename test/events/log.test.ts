import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import { writeTransaction } from "../../src/database/transaction.ts";
import { WayfindError } from "../../src/errors.ts";
import {
  type EventGap,
  EventLog,
  type EventLogOptions,
  type EventSubscription,
  eventsMigrations,
  type NewEvent,
  type StoredEvent,
} from "../../src/events/index.ts";

let dir: string;
let db: Db;
const logs: EventLog[] = [];
const aborts: AbortController[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "wayfind-events-"));
  db = openDatabase(join(dir, "wayfind.db"), eventsMigrations);
});
afterEach(() => {
  for (const a of aborts.splice(0)) a.abort();
  for (const log of logs.splice(0)) log.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function newLog(options: EventLogOptions = {}): EventLog {
  const log = new EventLog(db, { pruneIntervalMs: 0, ...options });
  logs.push(log);
  return log;
}

function signal(): AbortSignal {
  const a = new AbortController();
  aborts.push(a);
  return a.signal;
}

function ev(n: number, extra: Partial<NewEvent> = {}): NewEvent {
  return { type: "tool_search_query", tenantId: "acme", sessionId: "s1", attributes: { n }, ...extra };
}

/** Takes exactly `count` events from the subscription, failing if they do not arrive within 5 s. */
async function take(sub: EventSubscription, count: number): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  const it = sub[Symbol.asyncIterator]();
  const stop = new AbortController();
  const timeout = sleep(5000, "timeout" as const, { signal: stop.signal }).catch(() => "stopped" as const);
  try {
    while (out.length < count) {
      const r = await Promise.race([it.next(), timeout]);
      if (r === "timeout" || r === "stopped")
        throw new Error(`timed out after ${out.length} of ${count} events`);
      if (r.done) break;
      out.push(r.value);
    }
  } finally {
    stop.abort();
  }
  return out;
}

const ns = (events: readonly StoredEvent[]) => events.map((e) => e.attributes.n);

describe("EventLog", () => {
  it("assigns increasing ids and timestamps and stores attributes as JSON", () => {
    const log = newLog({ now: () => 1_000 });
    log.emit(ev(1, { runId: "r1", attributes: { query: "pods", hits: 3, cached: true } }));
    log.emit(ev(2));
    log.flush();
    const rows = db.prepare("SELECT id, ts_ms, tenant_id, run_id, attributes FROM events ORDER BY id").all();
    expect(rows).toEqual([
      {
        id: 1,
        ts_ms: 1000,
        tenant_id: "acme",
        run_id: "r1",
        attributes: '{"query":"pods","hits":3,"cached":true}',
      },
      { id: 2, ts_ms: 1000, tenant_id: "acme", run_id: null, attributes: '{"n":2}' },
    ]);
    expect(log.latestId).toBe(2n);
  });

  it("resuming after a cursor delivers every later event, then live ones", async () => {
    const log = newLog();
    for (let n = 1; n <= 10; n++) log.emit(ev(n));
    const sub = log.subscribe({ afterId: 4n, signal: signal() });
    const replayed = await take(sub, 6);
    expect(replayed.map((e) => e.id)).toEqual([5n, 6n, 7n, 8n, 9n, 10n]);
    log.emit(ev(11));
    expect(ns(await take(sub, 1))).toEqual([11]);
  });

  it("without a cursor delivers only events emitted after subscribing", async () => {
    const log = newLog();
    log.emit(ev(1));
    const sub = log.subscribe({ signal: signal() });
    log.emit(ev(2));
    expect(ns(await take(sub, 1))).toEqual([2]);
  });

  it("replayed and live events look the same", async () => {
    const log = newLog({ now: () => 5 });
    const live = log.subscribe({ signal: signal() });
    log.emit(ev(1, { runId: "r", tenantId: "", attributes: { a: "x", b: 1.5, c: false } }));
    const [fromLive] = await take(live, 1);
    const [fromReplay] = await take(log.subscribe({ afterId: 0n, signal: signal() }), 1);
    expect(fromReplay).toEqual(fromLive);
    expect(fromLive).toEqual({
      id: 1n,
      timestampMs: 5,
      type: "tool_search_query",
      sessionId: "s1",
      runId: "r",
      attributes: { a: "x", b: 1.5, c: false },
    });
  });

  it("hands over from replay to live with no gap and no duplicate while events keep coming", async () => {
    const log = newLog({ replayPageSize: 7 });
    for (let n = 1; n <= 500; n++) log.emit(ev(n));
    const sub = log.subscribe({ afterId: 0n, signal: signal() });
    // A producer emitting on every turn of the event loop, concurrently with the replay.
    let next = 501;
    const producer = (async () => {
      while (next <= 1500) {
        for (let i = 0; i < 5 && next <= 1500; i++) log.emit(ev(next++));
        await new Promise((r) => setImmediate(r));
      }
    })();
    const got = await take(sub, 1500);
    await producer;
    expect(got.map((e) => e.id)).toEqual(Array.from({ length: 1500 }, (_, i) => BigInt(i + 1)));
  });

  it("a slow consumer neither stalls a fast one nor misses anything retained", async () => {
    const log = newLog({ subscriberQueueLimit: 8, replayPageSize: 4 });
    const fast = log.subscribe({ afterId: 0n, signal: signal() });
    const slow = log.subscribe({ afterId: 0n, signal: signal() });
    const slowDone = (async () => {
      const out: StoredEvent[] = [];
      for await (const e of slow) {
        out.push(e);
        await sleep(1);
        if (out.length === 200) break;
      }
      return out;
    })();
    for (let burst = 0; burst < 10; burst++) {
      for (let i = 1; i <= 20; i++) log.emit(ev(burst * 20 + i));
      await new Promise((r) => setImmediate(r));
    }
    const fastGot = await take(fast, 200);
    expect(fastGot).toHaveLength(200);
    expect(fast.overflows).toBe(0);
    const slowGot = await slowDone;
    expect(slowGot.map((e) => e.id)).toEqual(fastGot.map((e) => e.id));
    expect(slow.overflows).toBeGreaterThan(0);
  });

  it("delivers a batched event only once it is stored, so a crash never leaves a consumer holding a lost id", async () => {
    const log = newLog();
    const sub = log.subscribe({ signal: signal() });
    const next = sub[Symbol.asyncIterator]().next();
    await sleep(0);
    log.emit(ev(1));
    expect(sub.cursor).toBe(0n); // queued: not written, not offered
    // A restart before the batch is written (kill -9) continues after the last stored id.
    expect(newLog().latestId).toBe(0n);
    log.flush();
    expect(sub.cursor).toBe(1n);
    expect((await next).value?.attributes).toEqual({ n: 1 });
  });

  it("never holds more than the queue limit in memory for a stalled consumer", () => {
    const log = newLog({ subscriberQueueLimit: 8 });
    const stalled = log.subscribe({ signal: signal() });
    for (let n = 1; n <= 1000; n++) log.emit(ev(n));
    log.flush(); // events reach subscribers once written
    // The subscriber dropped its queue and will catch up from SQLite when it reads again.
    expect(stalled.overflows).toBe(1);
    expect(stalled.cursor).toBe(0n);
  });

  it("keeps at most maxEvents: replay starts at the oldest retained event and reports the gap", async () => {
    const log = newLog({ maxEvents: 100 });
    for (let n = 1; n <= 1000; n++) log.emit(ev(n));
    log.flush();
    log.prune();
    expect(db.prepare("SELECT count(*) AS c FROM events").get()).toEqual({ c: 100 });
    const gaps: EventGap[] = [];
    const sub = log.subscribe({ afterId: 0n, signal: signal(), onGap: (g) => gaps.push(g) });
    const got = await take(sub, 100);
    expect(got[0]?.id).toBe(901n);
    expect(got.at(-1)?.id).toBe(1000n);
    expect(gaps).toEqual([{ afterId: 0n, resumedAfterId: 900n }]);
    expect(sub.gaps).toBe(1);
  });

  it("a consumer that lagged past retention resumes at the oldest retained event and is told of the gap", async () => {
    const log = newLog({ maxEvents: 100, subscriberQueueLimit: 4 });
    const gaps: EventGap[] = [];
    const lagging = log.subscribe({ afterId: 0n, signal: signal(), onGap: (g) => gaps.push(g) });
    expect(await take(lagging, 0)).toEqual([]);
    log.emit(ev(1));
    expect(ns(await take(lagging, 1))).toEqual([1]);
    for (let n = 2; n <= 1000; n++) log.emit(ev(n));
    log.flush(); // written and delivered while the consumer is not reading
    const rest = await take(lagging, 100);
    expect(rest.map((e) => e.id)).toEqual(Array.from({ length: 100 }, (_, i) => BigInt(901 + i)));
    expect(gaps).toEqual([{ afterId: 1n, resumedAfterId: 900n }]);
    expect(lagging.overflows).toBe(1);
  });

  it("prunes on insert without waiting for the timer", () => {
    const log = newLog({ maxEvents: 100 });
    for (let n = 1; n <= 1000; n++) log.emit(ev(n));
    log.flush();
    const { c } = db.prepare("SELECT count(*) AS c FROM events").get() as { c: number };
    // Storage lags by at most one prune batch (64 rows at this size).
    expect(c).toBeLessThanOrEqual(100 + 64);
  });

  it("drops events older than maxAgeHours", async () => {
    let now = 0;
    const log = newLog({ maxAgeHours: 1, now: () => now });
    for (let n = 1; n <= 5; n++) log.emit(ev(n));
    now = 2 * 3_600_000;
    for (let n = 6; n <= 8; n++) log.emit(ev(n));
    expect(ns(await take(log.subscribe({ afterId: 0n, signal: signal() }), 3))).toEqual([6, 7, 8]);
    log.prune();
    expect(db.prepare("SELECT min(id) AS first, count(*) AS c FROM events").get()).toEqual({
      first: 6,
      c: 3,
    });
  });

  it("filters by type, tenant and session, in replay and live alike", async () => {
    const log = newLog();
    const emitMix = (base: number) => {
      log.emit(ev(base + 1, { type: "tool_activated", tenantId: "acme", sessionId: "s1" }));
      log.emit(ev(base + 2, { type: "tool_get", tenantId: "acme", sessionId: "s1" }));
      log.emit(ev(base + 3, { type: "tool_activated", tenantId: "globex", sessionId: "s1" }));
      log.emit(ev(base + 4, { type: "tool_activated", tenantId: "acme", sessionId: "s2" }));
      log.emit(ev(base + 5, { type: "tool_activated", tenantId: undefined, sessionId: "s1" }));
    };
    emitMix(0);
    const sub = log.subscribe({
      types: ["tool_activated"],
      tenantId: "acme",
      sessionId: "s1",
      afterId: 0n,
      signal: signal(),
    });
    const replayed = await take(sub, 1);
    emitMix(10);
    const live = await take(sub, 1);
    expect(ns([...replayed, ...live])).toEqual([1, 11]);
  });

  it("a tenant-scoped consumer never receives another tenant's events", async () => {
    const log = newLog({ replayPageSize: 3 });
    for (let n = 1; n <= 50; n++) log.emit(ev(n, { tenantId: n % 2 === 0 ? "acme" : "globex" }));
    const acme = log.subscribe({ tenantId: "acme", afterId: 0n, signal: signal() });
    const noTenant = log.subscribe({ tenantId: "", afterId: 0n, signal: signal() });
    for (let n = 51; n <= 100; n++) log.emit(ev(n, { tenantId: n % 2 === 0 ? "acme" : "globex" }));
    log.emit(ev(101, { tenantId: undefined }));
    const got = await take(acme, 50);
    expect(got.every((e) => e.tenantId === "acme")).toBe(true);
    expect(ns(await take(noTenant, 1))).toEqual([101]);
  });

  it("aborting the signal ends a waiting iteration promptly and frees the subscriber", async () => {
    const log = newLog();
    const a = new AbortController();
    const sub = log.subscribe({ afterId: 0n, signal: a.signal });
    const it = sub[Symbol.asyncIterator]();
    const pending = it.next();
    expect(log.subscriberCount).toBe(1);
    a.abort();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(log.subscriberCount).toBe(0);
    log.emit(ev(1));
    await expect(it.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it("breaking out of for-await frees the subscriber", async () => {
    const log = newLog();
    log.emit(ev(1));
    for await (const _ of log.subscribe({ afterId: 0n, signal: signal() })) break;
    expect(log.subscriberCount).toBe(0);
  });

  it("close() ends every subscription and flushes pending events", async () => {
    const log = newLog();
    const sub = log.subscribe({ signal: signal() });
    const pending = sub[Symbol.asyncIterator]().next();
    log.emit(ev(1));
    await pending;
    log.emit(ev(2));
    log.close();
    expect(db.prepare("SELECT count(*) AS c FROM events").get()).toEqual({ c: 2 });
    const rest: StoredEvent[] = [];
    for await (const e of sub) rest.push(e);
    expect(rest).toEqual([]);
  });

  it("continues the id sequence after a restart, so old cursors still resume", async () => {
    const first = newLog();
    for (let n = 1; n <= 3; n++) first.emit(ev(n));
    first.close();
    const second = newLog();
    second.emit(ev(4));
    expect(second.latestId).toBe(4n);
    expect(ns(await take(second.subscribe({ afterId: 2n, signal: signal() }), 2))).toEqual([3, 4]);
  });

  it("rejects a cursor newer than any event it has issued", () => {
    const log = newLog();
    log.emit(ev(1));
    expect(() => log.subscribe({ afterId: 5n, signal: signal() })).toThrow(WayfindError);
  });

  it("never throws into the caller when the write fails; reports it instead", () => {
    const errors: unknown[] = [];
    const log = newLog({ onError: (e) => errors.push(e) });
    db.exec("DROP TABLE events");
    expect(() => {
      log.emit(ev(1));
      log.flush();
    }).not.toThrow();
    expect(errors).toHaveLength(1);
  });
});

describe("EventLog, events of a state change (emitted inside writeTransaction)", () => {
  const storedIds = () => db.prepare("SELECT id FROM events ORDER BY id").pluck().all();

  it("are in SQLite as soon as the change commits, without waiting for a batch", () => {
    const log = newLog();
    writeTransaction(db, () => log.emit(ev(1)));
    expect(storedIds()).toEqual([1]);
  });

  it("reach live subscribers only after the commit", async () => {
    const log = newLog();
    const sub = log.subscribe({ signal: signal() });
    const next = sub[Symbol.asyncIterator]().next();
    writeTransaction(db, () => {
      log.emit(ev(1));
      // Offered events move the cursor synchronously; inside the transaction nothing was offered.
      expect(sub.cursor).toBe(0n);
    });
    expect(sub.cursor).toBe(1n);
    expect((await next).value?.attributes).toEqual({ n: 1 });
  });

  it("are neither stored nor delivered when the change rolls back, and their ids go to the next events", async () => {
    const log = newLog();
    const sub = log.subscribe({ signal: signal() });
    expect(() =>
      writeTransaction(db, () => {
        log.emit(ev(1));
        throw new Error("change refused");
      }),
    ).toThrow("change refused");
    log.emit(ev(2));
    log.flush();
    expect(ns(await take(sub, 1))).toEqual([2]);
    // Never seen by anyone, so given again: a replica retrying a change numbers its events alike.
    expect(storedIds()).toEqual([1]);
  });

  it("give back the ids of a nested change that rolled back, keeping the outer change's", () => {
    const log = newLog();
    writeTransaction(db, () => {
      log.emit(ev(1));
      expect(() =>
        writeTransaction(db, () => {
          log.emit(ev(2));
          throw new Error("inner refused");
        }),
      ).toThrow("inner refused");
      log.emit(ev(3));
    });
    expect(storedIds()).toEqual([1, 2]);
    expect(log.latestId).toBe(2n);
  });

  it("fail the change when they cannot be written: both or neither", () => {
    const log = newLog();
    db.exec("CREATE TABLE change (n INTEGER)");
    db.exec("DROP TABLE events");
    expect(() =>
      writeTransaction(db, () => {
        db.prepare("INSERT INTO change VALUES (1)").run();
        log.emit(ev(1));
      }),
    ).toThrow(/no such table: events/);
    expect(db.prepare("SELECT count(*) FROM change").pluck().get()).toBe(0);
  });

  it("hand over from replay to live with no gap and no duplicate, mixed with batched events", async () => {
    const log = newLog({ replayPageSize: 7 });
    for (let n = 1; n <= 300; n++) log.emit(ev(n));
    const sub = log.subscribe({ afterId: 0n, signal: signal() });
    let next = 301;
    const producer = (async () => {
      while (next <= 1000) {
        // Alternate committed changes and batched reports, on every turn of the event loop.
        writeTransaction(db, () => log.emit(ev(next++)));
        log.emit(ev(next++));
        await new Promise((r) => setImmediate(r));
      }
    })();
    const got = await take(sub, 1000);
    await producer;
    expect(got.map((e) => e.id)).toEqual(Array.from({ length: 1000 }, (_, i) => BigInt(i + 1)));
  });

  it("follow every batched event emitted before them, on the wire as in SQLite", async () => {
    const log = newLog();
    const sub = log.subscribe({ signal: signal() });
    log.emit(ev(1)); // a report, queued
    writeTransaction(db, () => log.emit(ev(2))); // the queue is written and delivered first
    expect(ns(await take(sub, 2))).toEqual([1, 2]);
    expect(storedIds()).toEqual([1, 2]);
  });

  it("stay bounded by maxEvents without the timer, as batched events do", () => {
    const log = newLog({ maxEvents: 100 });
    for (let n = 1; n <= 5_000; n++) writeTransaction(db, () => log.emit(ev(n)));
    // Deleted in batches of the prune slack (64 rows at this size), so at most maxEvents + slack stay.
    expect(storedIds().length).toBeLessThanOrEqual(164);
    expect(storedIds().at(-1)).toBe(5_000);
  });
});
