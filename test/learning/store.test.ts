import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import { LearningStore, learningMigrations } from "../../src/learning/index.ts";
import { LocalWriter } from "../../src/replication/writes.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function storeWith(bounds: { maxRequestsPerTool: number; maxRowsPerTenant: number }, now = () => 0) {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-learning-store-"));
  dirs.push(dir);
  const db = openDatabase(join(dir, "wayfind.db"), learningMigrations);
  return {
    db,
    store: new LearningStore(
      db,
      new LocalWriter(db, now),
      { halfLifeDays: 30, ...bounds },
      () => {},
      undefined,
    ),
  };
}

const rowsIn = (db: Db, tenant: string) =>
  (db.prepare("SELECT COUNT(*) AS n FROM learned_requests WHERE tenant_id = ?").get(tenant) as { n: number })
    .n;

const lesson = (tenantId: string, actor: string, request: string, tool: string, delta = 1) => ({
  tenantId,
  actor,
  request,
  deltas: [{ tool, delta }],
  reportKey: "",
});

describe("LearningStore", () => {
  it("keeps a tool's heaviest requests, up to its bound", async () => {
    const { store } = storeWith({ maxRequestsPerTool: 2, maxRowsPerTenant: 1_000 });
    await store.teach(lesson("acme", "a", "light", "hr.leave", 0.5));
    await store.teach(lesson("acme", "a", "heavy", "hr.leave", 2));
    await store.teach(lesson("acme", "a", "middle", "hr.leave", 1));
    expect(
      store
        .read("acme", 0)
        .map((r) => r.request)
        .sort(),
    ).toEqual(["heavy", "middle"]);
  });

  it("keeps a tenant's most recently taught rows, up to its bound, and no other tenant's are touched", async () => {
    let clock = 0;
    const { db, store } = storeWith({ maxRowsPerTenant: 20, maxRequestsPerTool: 1_000 }, () => clock);
    await store.teach(lesson("other", "a", "kept", "t"));
    for (let i = 0; i < 50; i++) {
      clock = i;
      await store.teach(lesson("acme", `actor-${i % 3}`, `request ${i}`, `tool-${i % 7}`));
    }
    expect(rowsIn(db, "acme")).toBeLessThanOrEqual(20);
    expect(store.read("acme", clock).some((r) => r.request === "request 49")).toBe(true);
    expect(store.read("acme", clock).some((r) => r.request === "request 0")).toBe(false);
    expect(store.read("other", clock)).toHaveLength(1);
  });

  it("caps each actor's weight, so one actor's flood counts as three choices", async () => {
    const { store } = storeWith({ maxRequestsPerTool: 10, maxRowsPerTenant: 100 });
    for (let i = 0; i < 40; i++) await store.teach(lesson("acme", "flooder", "pto", "hr.leave"));
    await store.teach(lesson("acme", "honest", "pto", "hr.leave", -1.5));
    await store.teach(lesson("acme", "honest-2", "pto", "hr.leave", -1.5));
    expect(store.read("acme", 0)[0]?.weight ?? Number.NaN).toBeCloseTo(0, 9);
  });

  it("halves a weight every half-life, counted in whole days", async () => {
    const { store } = storeWith({ maxRequestsPerTool: 10, maxRowsPerTenant: 100 });
    await store.teach(lesson("acme", "a", "pto", "hr.leave", 2));
    const day = 86_400_000;
    expect(store.read("acme", 30 * day)[0]?.weight).toBeCloseTo(1, 9);
    expect(store.read("acme", 30 * day - 1)[0]?.weight).toBe(store.read("acme", 29 * day)[0]?.weight);
  });

  it("reads a tenant in pages exactly as at once, a request's actors summed across a page's end", async () => {
    const { store } = storeWith({ maxRequestsPerTool: 1_000, maxRowsPerTenant: 10_000 });
    // Three actors a request: a page of 2,000 rows ends inside a request's rows.
    for (let i = 0; i < 1_000; i++)
      for (const actor of ["a", "b", "c"])
        await store.teach(lesson("acme", actor, `request ${i}`, `tool-${i % 3}`));
    const paged = [...store.readInPages("acme", 0)];
    const byKey = (rows: { tool: string; request: string }[]) =>
      [...rows].sort((x, y) => `${x.tool} ${x.request}`.localeCompare(`${y.tool} ${y.request}`));
    expect(paged.length).toBeGreaterThan(1);
    expect(byKey(paged.flat())).toEqual(byKey(store.read("acme", 0)));
    expect(paged.flat().filter((row) => row.weight !== 3)).toEqual([]);
  });

  it("applies a report key once a day", async () => {
    const { store } = storeWith({ maxRequestsPerTool: 10, maxRowsPerTenant: 100 });
    const keyed = { ...lesson("acme", "a", "pto", "hr.leave"), reportKey: "k" };
    expect(await store.teach(keyed)).toBe(true);
    expect(await store.teach(keyed)).toBe(false);
    expect(store.read("acme", 0)[0]?.weight).toBe(1);
  });
});
