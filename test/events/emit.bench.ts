// Run: npx vitest bench test/events — emit cost on the request path, with live subscribers.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bench, describe } from "vitest";
import { openDatabase } from "../../src/database/sqlite.ts";
import { EventLog, eventsMigrations } from "../../src/events/index.ts";

const db = openDatabase(join(mkdtempSync(join(tmpdir(), "wayfind-bench-")), "events.db"), eventsMigrations);
const log = new EventLog(db, { maxEvents: 50_000 });
const abort = new AbortController();
for (let i = 0; i < 10; i++) {
  const sub = log.subscribe({ tenantId: `t${i}`, signal: abort.signal });
  void (async () => {
    for await (const _ of sub);
  })();
}
let n = 0;

describe("EventLog.emit", () => {
  bench("emit (batched write per event-loop turn, 10 subscribers)", () => {
    n++;
    log.emit({
      type: "tool_search_query",
      tenantId: `t${n % 10}`,
      sessionId: `s${n % 100}`,
      attributes: { query: "list pods", results: 8 },
    });
  });
  bench("emit + flush (one autocommit write per event, the unbatched cost)", () => {
    n++;
    log.emit({ type: "tool_get", tenantId: `t${n % 10}`, attributes: { name: "k8s.list_pods" } });
    log.flush();
  });
});
