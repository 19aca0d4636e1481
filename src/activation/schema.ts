import type { Migration } from "../database/sqlite.ts";

/**
 * One row per (tenant, project, scope, scope id, tool). The UNIQUE key is what makes concurrent
 * activations in one session safe: INSERT OR IGNORE can neither lose nor duplicate a row. `seq`
 * (AUTOINCREMENT, never reused) is the activation order rendering relies on.
 */
export const activationMigrations: readonly Migration[] = [
  {
    id: "activation/001-init",
    up: `
      CREATE TABLE tool_activations (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        scope TEXT NOT NULL CHECK (scope IN ('run', 'session')),
        scope_id TEXT NOT NULL CHECK (scope_id <> ''),
        tool_name TEXT NOT NULL,
        source TEXT NOT NULL,
        reason TEXT NOT NULL,
        activated_at_ms INTEGER NOT NULL,
        last_used_at_ms INTEGER NOT NULL,
        UNIQUE (tenant_id, project_id, scope, scope_id, tool_name)
      );
      CREATE INDEX tool_activations_expiry ON tool_activations (scope, last_used_at_ms);
    `,
  },
];
