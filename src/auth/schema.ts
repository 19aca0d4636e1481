import type { Migration } from "../database/sqlite.ts";
import { MAX_KEY_EXPIRY_MS } from "./api-keys.ts";

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
  {
    // A key id is unique within its tenant only: another tenant's id behaves exactly as a free one.
    // Expiries past what a Timestamp can carry in JSON (year 9999) are brought down to its last
    // millisecond, which every encoding of the API can show.
    id: "auth/002-tenant-scoped-key-ids",
    up: `
      CREATE TABLE api_keys_by_tenant (
        tenant_id TEXT NOT NULL,
        id TEXT NOT NULL,
        key_sha256 TEXT NOT NULL UNIQUE,
        roles_json TEXT NOT NULL,
        entitlements_json TEXT NOT NULL,
        projects_json TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        -- NULL = never expires / not revoked
        expires_at_ms INTEGER,
        revoked_at_ms INTEGER,
        PRIMARY KEY (tenant_id, id)
      );
      INSERT INTO api_keys_by_tenant
        SELECT tenant_id, id, key_sha256, roles_json, entitlements_json, projects_json, created_at_ms,
               min(expires_at_ms, ${MAX_KEY_EXPIRY_MS}), revoked_at_ms
        FROM api_keys;
      DROP TABLE api_keys;
      ALTER TABLE api_keys_by_tenant RENAME TO api_keys;
    `,
  },
];
