import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANONYMOUS_CALLER } from "../../src/caller/caller.ts";
import { DEFAULTS } from "../../src/config/index.ts";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import { Learning, learningMigrations } from "../../src/learning/index.ts";
import { LocalWriter } from "../../src/replication/writes.ts";
import { Embedder } from "../../src/semantic/embedder.ts";
import { writeToyModel } from "../support/toy-model.ts";

/**
 * The vectors of learned requests are kept with the learned requests: a server that starts again, or
 * reads a tenant's model again after dropping it to stay within `learning.max_requests_in_memory`,
 * finds them without embedding anything, and ranks exactly as before.
 */

const CONCEPTS = [
  ["pto", "leave", "vacation", "holiday", "days"],
  ["flight", "plane", "trip", "fly"],
  ["salary", "payslip", "pay", "month"],
];
const LESSONS = [
  { request: "book pto days", tool: "hr.request_leave" },
  { request: "fly to berlin", tool: "travel.book_flight" },
  { request: "my pay this month", tool: "hr.payslip" },
];

let dir: string;
let model: Embedder;
/** Every request the model was asked to embed, through the learning under test. */
const embedded: string[] = [];
const openDbs: Db[] = [];
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "wayfind-learned-vectors-"));
  writeToyModel(join(dir, "model"), CONCEPTS);
  model = await Embedder.open(join(dir, "model"));
});
afterAll(async () => {
  for (const db of openDbs) db.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A server's learning over the database file `name` (opened anew, as after a restart). */
function learningOn(name: string, maxRequestsInMemory = DEFAULTS.learning.maxRequestsInMemory): Learning {
  const db = openDatabase(join(dir, name), learningMigrations);
  openDbs.push(db);
  return new Learning({
    db,
    writer: new LocalWriter(db),
    config: { ...DEFAULTS.learning, maxRequestsInMemory },
    embedder: {
      modelId: model.modelId,
      embedQuery: (text) => {
        embedded.push(text);
        return model.embedQuery(text);
      },
    },
  });
}

async function teach(learning: Learning, tenantId: string): Promise<void> {
  for (const { request, tool } of LESSONS)
    await learning.store.teach({
      tenantId,
      actor: "agent",
      request,
      deltas: [{ tool, delta: 1 }],
      reportKey: "",
    });
}

async function scoresOf(learning: Learning, tenantId: string, request: string) {
  const caller = { ...ANONYMOUS_CALLER, tenantId };
  return (await learning.evidence(caller, request, [await model.embedQuery(request)]))?.scores;
}

describe("learned request vectors", () => {
  it("are embedded once: a server started again ranks as before without embedding any", async () => {
    const first = learningOn("restart.db");
    await teach(first, "acme");
    embedded.length = 0;
    await first.settled("acme");
    expect(embedded.sort()).toEqual(LESSONS.map((lesson) => lesson.request).sort());
    const before = await scoresOf(first, "acme", "holiday leave");
    expect(before?.get("hr.request_leave")).toBeGreaterThan(0);

    const again = learningOn("restart.db");
    embedded.length = 0;
    await again.settled("acme");
    expect(await scoresOf(again, "acme", "holiday leave")).toEqual(before);
    expect(embedded).toEqual([]);
  });

  it("let a model dropped to stay within max_requests_in_memory be read again unchanged, embedding nothing", async () => {
    const learning = learningOn("memory.db", LESSONS.length);
    await teach(learning, "acme");
    await teach(learning, "globex");
    await learning.settled("acme");
    const acme = await scoresOf(learning, "acme", "holiday leave");
    await learning.settled("globex");
    // Searching globex dropped acme's model: only one tenant's requests fit.
    expect(learning.requestsInMemory).toBe(LESSONS.length);
    embedded.length = 0;
    expect(await scoresOf(learning, "acme", "holiday leave")).toEqual(acme);
    expect(learning.requestsInMemory).toBe(LESSONS.length);
    expect(embedded).toEqual([]);
  });

  it("of requests a tenant no longer holds are dropped when its model is read again", async () => {
    const learning = learningOn("stale.db");
    await teach(learning, "acme");
    await learning.settled("acme");
    const db = openDbs.at(-1) as Db;
    db.prepare("DELETE FROM learned_requests WHERE tenant_id = 'acme' AND tool_name = 'hr.payslip'").run();
    const storedOf = () =>
      (
        db.prepare("SELECT request FROM learned_request_vectors WHERE tenant_id = 'acme'").all() as {
          request: string;
        }[]
      )
        .map((row) => row.request)
        .sort();
    expect(storedOf()).toHaveLength(3);
    await learningOn("stale.db").settled("acme");
    await expect.poll(storedOf).toEqual(["book pto days", "fly to berlin"]);
  });
});
