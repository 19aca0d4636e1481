import { createHash, randomBytes } from "node:crypto";
import type { Role } from "../caller/caller.ts";
import type { ApiKeyConfig, GrantConfig } from "../config/index.ts";
import type { Db } from "../database/sqlite.ts";
import { writeTransaction } from "../database/transaction.ts";
import { invalidArgument, WayfindError } from "../errors.ts";

/** Every wayfind API key starts with this, so a leaked one is recognisable (secret scanners, logs). */
export const API_KEY_PREFIX = "wf_";
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Whether `id` may name a key: 1-64 letters, digits, '.', '_' or '-'. */
export function isKeyId(id: string): boolean {
  return KEY_ID.test(id);
}

/** One API key as the store knows it: what it grants, never its secret. */
export interface ApiKey extends GrantConfig {
  readonly id: string;
  /** Declared in the config file (`auth.api_keys`), or created (`wayfind keys create`, KeyService). */
  readonly origin: "config" | "created";
  readonly createdAtMs: number | undefined;
  readonly expiresAtMs: number | undefined;
  readonly revokedAtMs: number | undefined;
}

export interface NewApiKey extends GrantConfig {
  /** undefined = a random id. */
  readonly id?: string | undefined;
  readonly expiresAtMs?: number | undefined;
}

interface KeyRow {
  id: string;
  tenant_id: string;
  roles_json: string;
  entitlements_json: string;
  projects_json: string;
  created_at_ms: number;
  expires_at_ms: number | null;
  revoked_at_ms: number | null;
}

/** The SHA-256 of a key, as stored and as `auth.api_keys[].key_sha256` declares it (lower-case hex). */
export function apiKeySha256(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** Keys remembered between database changes (hits and misses); beyond this, lookups go to SQLite. */
const CACHED_LOOKUPS = 10_000;

/**
 * API keys: those the config declares plus those `wayfind keys` keeps in the database. Keys are
 * looked up by SHA-256 and remembered until the database changes: SQLite's `data_version` moves when
 * another connection (the CLI, in its own process) commits, so a created or revoked key takes effect
 * on the next call while the server runs, for ~3 µs per call instead of a query.
 */
export class ApiKeyStore {
  private readonly db: Db;
  private readonly configured: ReadonlyMap<string, ApiKey>;
  private readonly configuredById: ReadonlyMap<string, ApiKey>;
  private readonly byHash;
  private readonly byId;
  private readonly dataVersion;
  private readonly cache = new Map<string, ApiKey | null>();
  private cachedVersion = -1;

  constructor(db: Db, configured: readonly ApiKeyConfig[] = []) {
    this.db = db;
    this.configured = new Map(
      configured.map((key) => [
        key.keySha256,
        { ...key, origin: "config", createdAtMs: undefined, revokedAtMs: undefined } satisfies ApiKey,
      ]),
    );
    this.configuredById = new Map([...this.configured.values()].map((key) => [key.id, key]));
    this.byHash = db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE key_sha256 = ?");
    this.byId = db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE id = ?");
    this.dataVersion = db.prepare<[], number>("PRAGMA data_version").pluck();
  }

  /** The key whose secret this is, whatever its state (expired, revoked); undefined = no such key. */
  find(secret: string): ApiKey | undefined {
    const hash = apiKeySha256(secret);
    const configured = this.configured.get(hash);
    if (configured) return configured;
    const version = this.dataVersion.get() ?? 0;
    if (version !== this.cachedVersion) {
      this.cache.clear();
      this.cachedVersion = version;
    }
    const cached = this.cache.get(hash);
    if (cached !== undefined) return cached ?? undefined;
    const row = this.byHash.get(hash);
    const key = row ? fromRow(row) : null;
    if (this.cache.size < CACHED_LOOKUPS) this.cache.set(hash, key);
    return key ?? undefined;
  }

  /** Creates a key; the secret is returned here once and never stored. */
  create(key: NewApiKey, now = Date.now()): { key: ApiKey; secret: string } {
    const id = key.id ?? `k_${randomBytes(6).toString("base64url")}`;
    if (!isKeyId(id))
      throw invalidArgument(`key id ${JSON.stringify(id)}: use 1-64 letters, digits, '.', '_' or '-'`);
    if (key.tenant === "" && !key.roles.includes("admin"))
      throw invalidArgument(
        "name the key's tenant (--tenant); only an admin key may have none (the operator)",
      );
    if (key.expiresAtMs !== undefined && key.expiresAtMs <= now)
      throw invalidArgument("the expiry is in the past; give a future time");
    const secret = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
    writeTransaction(this.db, () => {
      if (this.byId.get(id) || this.configuredById.has(id))
        throw new WayfindError(
          "already_exists",
          `a key with id ${JSON.stringify(id)} exists; choose another id`,
        );
      this.db
        .prepare(
          `INSERT INTO api_keys (id, key_sha256, tenant_id, roles_json, entitlements_json, projects_json,
             created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          apiKeySha256(secret),
          key.tenant,
          JSON.stringify([...new Set(key.roles)]),
          JSON.stringify(key.entitlements),
          JSON.stringify(key.projects),
          now,
          key.expiresAtMs ?? null,
        );
    });
    this.cache.clear();
    const created = this.byId.get(id);
    if (!created) throw new Error(`key ${id} vanished after its insert`);
    return { key: fromRow(created), secret };
  }

  /** The key with this id, whatever its state; undefined = no such key. */
  get(id: string): ApiKey | undefined {
    const configured = this.configuredById.get(id);
    if (configured) return configured;
    const row = this.byId.get(id);
    return row ? fromRow(row) : undefined;
  }

  /** Every key, config-declared first, then by creation. */
  list(): ApiKey[] {
    const rows = this.db.prepare<[], KeyRow>("SELECT * FROM api_keys ORDER BY created_at_ms, id").all();
    return [...this.configured.values(), ...rows.map(fromRow)];
  }

  /**
   * Revokes a key created with `wayfind keys create` or KeyService; true if it was active. Keys
   * declared in the config are revoked by removing them from it.
   */
  revoke(id: string, now = Date.now()): boolean {
    if (this.configuredById.has(id))
      throw new WayfindError(
        "failed_precondition",
        `key ${JSON.stringify(id)} is declared in the config file (auth.api_keys); remove it there and restart`,
      );
    const result = this.db
      .prepare("UPDATE api_keys SET revoked_at_ms = ? WHERE id = ? AND revoked_at_ms IS NULL")
      .run(now, id);
    this.cache.clear();
    if (result.changes > 0) return true;
    if (this.byId.get(id)) return false;
    throw new WayfindError(
      "not_found",
      `no key with id ${JSON.stringify(id)}; "wayfind keys list" shows them`,
    );
  }
}

function fromRow(row: KeyRow): ApiKey {
  return {
    id: row.id,
    origin: "created",
    tenant: row.tenant_id,
    roles: JSON.parse(row.roles_json) as Role[],
    entitlements: JSON.parse(row.entitlements_json) as string[],
    projects: JSON.parse(row.projects_json) as string[],
    createdAtMs: row.created_at_ms,
    expiresAtMs: row.expires_at_ms ?? undefined,
    revokedAtMs: row.revoked_at_ms ?? undefined,
  };
}
