import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

export type Db = Database.Database;

/**
 * SQLite page cache per connection, in KiB. Starting (opening, indexing the catalogs, loading skill
 * packs) reads and writes each page about once, and those pages then go cold: a small cache keeps
 * them from staying resident. Serving gets better-sqlite3's default again, for
 * the pages calls read (skill rows, usage, activations); smaller measurably slowed skill search.
 */
export const CACHE_KIB = { starting: 2048, serving: 16_000 } as const;

export function setCacheSize(db: Db, kib: number): void {
  db.pragma(`cache_size = -${kib}`);
}

/**
 * One schema change. `id` is global and sortable: `<capability>/<NNN>-<what>`, e.g. `skills/001-init`.
 * Each capability owns its migrations (src/<capability>/schema.ts); `src/server/migrations.ts` (the composition root) lists them all, so the store imports no capability.
 */
export interface Migration {
  readonly id: string;
  readonly up: string | ((db: Db) => void);
}

/** Opens (creating if needed) the SQLite file, in WAL mode, and applies pending migrations in one transaction each. */
export function openDatabase(file: string, migrations: readonly Migration[]): Db {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  // NORMAL is durable across process crashes in WAL mode; only an OS crash can lose the last commits.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  setCacheSize(db, CACHE_KIB.serving);
  applyMigrations(db, migrations);
  return db;
}

export function applyMigrations(db: Db, migrations: readonly Migration[]): string[] {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))",
  );
  const applied = new Set(
    db
      .prepare<[], { id: string }>("SELECT id FROM schema_migrations")
      .all()
      .map((row) => row.id),
  );
  const record = db.prepare("INSERT INTO schema_migrations (id) VALUES (?)");
  const newlyApplied: string[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.id)) continue;
    db.transaction(() => {
      if (typeof migration.up === "string") db.exec(migration.up);
      else migration.up(db);
      record.run(migration.id);
    })();
    newlyApplied.push(migration.id);
  }
  return newlyApplied;
}

/** True when this SQLite build has FTS5 (better-sqlite3's bundled build does; system builds may not). */
export function hasFts5(db: Db): boolean {
  try {
    db.exec("CREATE VIRTUAL TABLE temp.__fts5_probe USING fts5(x); DROP TABLE temp.__fts5_probe;");
    return true;
  } catch {
    return false;
  }
}
