import type { Migration } from "../database/sqlite.ts";

/** API keys created with `wayfind keys create`: only the key's SHA-256 is stored, never the key. */
export const authMigrations: Migration[] = [
  {
    id: "auth/001-api-keys",
    up: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        key_sha256 TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        roles_json TEXT NOT NULL,
        entitlements_json TEXT NOT NULL,
        projects_json TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        -- NULL = never expires / not revoked
        expires_at_ms INTEGER,
        revoked_at_ms INTEGER
      );
    `,
  },
];
