import type { Migration } from "../database/sqlite.ts";

export const eventsMigrations: Migration[] = [
  {
    id: "events/001-init",
    up: `
      -- AUTOINCREMENT: ids are never reused, even after pruning, so a cursor stays meaningful.
      CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts_ms INTEGER NOT NULL,
        type TEXT NOT NULL,
        tenant_id TEXT,
        session_id TEXT,
        run_id TEXT,
        attributes TEXT NOT NULL
      );
      CREATE INDEX events_by_ts ON events (ts_ms);
      -- Tenant-scoped replay reads a page without scanning other tenants' events. No session index:
      -- each index costs on every insert, and session watchers are usually tenant-scoped too.
      CREATE INDEX events_by_tenant ON events (tenant_id, id);
      -- pruned_through: every event id <= this value has been deleted by retention.
      CREATE TABLE events_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    `,
  },
];
