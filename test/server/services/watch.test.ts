import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { unauthenticatedPrincipal } from "../../../src/auth/principal.ts";
import { openDatabase } from "../../../src/database/sqlite.ts";
import { EventLog, eventsMigrations } from "../../../src/events/index.ts";
import { TOOL_EVENT_TYPES, watchEvents } from "../../../src/server/services/watch.ts";
import { busyFor } from "../../support/cpu.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function eventLog(): EventLog {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-watch-"));
  const db = openDatabase(join(dir, "wayfind.db"), eventsMigrations);
  const log = new EventLog(db, { pruneIntervalMs: 0 });
  cleanups.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => db.close(),
    () => log.close(),
  );
  return log;
}

describe("watch streams", () => {
  it("spread a burst for many streams over turns of the event loop instead of sending it all in one", async () => {
    const log = eventLog();
    const streams = 100;
    const burst = 40;
    const abort = new AbortController();
    cleanups.push(() => abort.abort());
    let watching = 0;
    let sent = 0;
    const consumers = Array.from({ length: streams }, async () => {
      const principal = unauthenticatedPrincipal("acme", false);
      for await (const message of watchEvents(log, principal, undefined, TOOL_EVENT_TYPES, abort.signal)) {
        if (message.message.case === "status") watching++;
        if (message.message.case === "event") {
          busyFor(0.05);
          if (++sent === streams * burst) abort.abort();
        }
      }
    });
    while (watching < streams) await sleep(1);

    for (let i = 0; i < burst; i++) {
      log.emit({ type: "tool_search_query", tenantId: "acme", attributes: { query: `q${i}` } });
    }
    // Scheduled right after the burst: if the fan-out ran in one turn, it would fire after all of it.
    let sentWhenTimerFired = -1;
    setTimeout(() => {
      sentWhenTimerFired = sent;
    }, 0);
    await Promise.all(consumers);

    expect(sent).toBe(streams * burst);
    expect(sentWhenTimerFired).toBeGreaterThanOrEqual(0);
    expect(sentWhenTimerFired).toBeLessThan(streams * burst);
  });
});
