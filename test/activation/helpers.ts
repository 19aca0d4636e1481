import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { ActivationStore, activationMigrations } from "../../src/activation/index.ts";
import { type Db, openDatabase } from "../../src/database/sqlite.ts";
import type { NewEvent } from "../../src/events/index.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()?.();
});

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-activation-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface OpenedStore {
  readonly store: ActivationStore;
  readonly db: Db;
  readonly file: string;
  readonly events: NewEvent[];
  readonly clock: { now: number };
}

/** An activation store on a real SQLite file (closed after the test), with a settable clock. */
export function openStore(
  options: { file?: string; ttlSeconds?: number; clock?: { now: number } } = {},
): OpenedStore {
  const file = options.file ?? join(tempDir(), "wayfind.db");
  const db = openDatabase(file, activationMigrations);
  cleanups.push(() => {
    if (db.open) db.close();
  });
  const events: NewEvent[] = [];
  const clock = options.clock ?? { now: 1_700_000_000_000 };
  const store = new ActivationStore(db, {
    events: { emit: (e) => events.push(e) },
    runActivationTtlSeconds: options.ttlSeconds ?? 60,
    now: () => clock.now,
  });
  return { store, db, file, events, clock };
}
