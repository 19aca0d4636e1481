import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { ANONYMOUS_CALLER, type Caller } from "../../src/caller/caller.ts";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import type { EventSink, NewEvent } from "../../src/events/event.ts";
import { type PricingTable, UsageLedger, usageMigrations } from "../../src/usage/index.ts";

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function tempDbFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-usage-"));
  dirs.push(dir);
  return join(dir, "wayfind.db");
}

export function openUsageDb(file = tempDbFile()): Db {
  const db = openDatabase(file, usageMigrations);
  dbs.push(db);
  return db;
}

export interface Harness {
  readonly ledger: UsageLedger;
  readonly events: NewEvent[];
  readonly db: Db;
  readonly file: string;
}

export function harness(
  options: {
    pricing?: PricingTable;
    now?: () => number;
    retentionClock?: () => number;
    file?: string;
    retentionDays?: number;
  } = {},
): Harness {
  const file = options.file ?? tempDbFile();
  const db = openUsageDb(file);
  const events: NewEvent[] = [];
  const sink: EventSink = { emit: (e) => events.push(e) };
  const ledger = new UsageLedger({
    db,
    events: sink,
    pricing: options.pricing,
    now: options.now,
    ...(options.retentionClock ? { retentionClock: options.retentionClock } : {}),
    retentionDays: options.retentionDays,
  });
  return { ledger, events, db, file };
}

export function caller(overrides: Partial<Caller> = {}): Caller {
  return { ...ANONYMOUS_CALLER, tenantId: "acme", sessionId: "s1", runId: "r1", ...overrides };
}

export const usage = (input: number, output = 0, cacheRead = 0, cacheWrite = 0) => ({
  inputTokens: input,
  outputTokens: output,
  cacheReadInputTokens: cacheRead,
  cacheCreationInputTokens: cacheWrite,
});
