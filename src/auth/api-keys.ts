import { createHash, randomBytes } from "node:crypto";
import type { Role } from "../caller/caller.ts";
import { type ApiKeyConfig, DEFAULTS, type GrantConfig } from "../config/index.ts";
import type { Db } from "../database/sqlite.ts";
import { writeTransaction } from "../database/transaction.ts";
import { invalidArgument, WayfindError } from "../errors.ts";

/** Every wayfind API key starts with this, so a leaked one is recognisable (secret scanners, logs). */
export const API_KEY_PREFIX = "wf_";
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The latest expiry a key may have: the last millisecond of year 9999, the latest time a
 * google.protobuf.Timestamp can carry in JSON (Connect JSON, the console). Beyond it a listing of
 * the key could not be encoded.
 */
export const MAX_KEY_EXPIRY_MS = Date.UTC(10_000, 0, 1) - 1;

const DAY_MS = 86_400_000;

/** Whether `id` may name a key: 1-64 letters, digits, '.', '_' or '-'. */
export function isKeyId(id: string): boolean {
  return KEY_ID.test(id);
}

/**
 * Who a key acts as in logs, audit lines and per-principal limits: `key:<id>` for an operator key,
 * `key:<tenant>/<id>` for a tenant's (ids are unique within a tenant only).
 */
export function keyPrincipalId(key: { readonly tenant: string; readonly id: string }): string {
  return key.tenant === "" ? `key:${key.id}` : `key:${key.tenant}/${key.id}`;
}

/** One API key as the store knows it: what it grants, never its secret. */
export interface ApiKey extends GrantConfig {
  /** Unique within its tenant (another tenant may have a key of the same id). */
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

/** `tenant` and `id` as one map key. */
const scoped = (tenant: string, id: string) => `${tenant}\u0000${id}`;

/**
 * API keys: those the config declares plus those `wayfind keys` keeps in the database. Keys are
 * looked up by SHA-256 and remembered until the database changes: SQLite's `data_version` moves when
 * another connection (the CLI, in its own process) commits, so a created or revoked key takes effect
 * on the next call while the server runs, for ~3 µs per call instead of a query. A key id is unique
 * within its tenant. Revoked and expired keys are deleted once `retentionDays` have passed.
 */
export class ApiKeyStore {
  private readonly db: Db;
  private readonly configured: ReadonlyMap<string, ApiKey>;
  private readonly configuredById: ReadonlyMap<string, ApiKey>;
  private readonly retentionMs: number;
  private readonly byHash;
  private readonly byId;
  private readonly dataVersion;
  private readonly cache = new Map<string, ApiKey | null>();
  private cachedVersion = -1;
  /** Changes made through this store (its own writes leave `data_version` unchanged). */
  private ownWrites = 0;

  constructor(
    db: Db,
    configured: readonly ApiKeyConfig[] = [],
    retentionDays: number = DEFAULTS.auth.keyRetentionDays,
  ) {
    this.db = db;
    this.configured = new Map(
      configured.map((key) => [
        key.keySha256,
        { ...key, origin: "config", createdAtMs: undefined, revokedAtMs: undefined } satisfies ApiKey,
      ]),
    );
    this.configuredById = new Map(
      [...this.configured.values()].map((key) => [scoped(key.tenant, key.id), key]),
    );
    this.retentionMs = retentionDays * DAY_MS;
    this.byHash = db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE key_sha256 = ?");
    this.byId = db.prepare<[string, string], KeyRow>("SELECT * FROM api_keys WHERE tenant_id = ? AND id = ?");
    this.dataVersion = db.prepare<[], number>("PRAGMA data_version").pluck();
  }

  /**
   * Moves whenever a key may have been created, revoked or deleted, by this process or another:
   * what was found before may have changed since.
   */
  revision(): string {
    return `${this.dataVersion.get() ?? 0}:${this.ownWrites}`;
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
    if (key.expiresAtMs !== undefined && key.expiresAtMs > MAX_KEY_EXPIRY_MS)
      throw invalidArgument(
        `the expiry is after ${new Date(MAX_KEY_EXPIRY_MS).toISOString()}, the latest a key may have`,
      );
    const secret = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
    writeTransaction(this.db, () => {
      this.purge(now);
      if (this.byId.get(key.tenant, id) || this.configuredById.has(scoped(key.tenant, id)))
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
    this.changed();
    const created = this.byId.get(key.tenant, id);
    if (!created) throw new Error(`key ${id} vanished after its insert`);
    return { key: fromRow(created), secret };
  }

  /** The key of `tenant` with this id, whatever its state; undefined = no such key. */
  get(tenant: string, id: string): ApiKey | undefined {
    const configured = this.configuredById.get(scoped(tenant, id));
    if (configured) return configured;
    const row = this.byId.get(tenant, id);
    return row ? fromRow(row) : undefined;
  }

  /** Every tenant's keys with this id (the operator names a key by id, and by tenant where two share it). */
  withId(id: string): ApiKey[] {
    const rows = this.db
      .prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE id = ? ORDER BY tenant_id")
      .all(id);
    return [...[...this.configured.values()].filter((key) => key.id === id), ...rows.map(fromRow)];
  }

  /**
   * Every key, config-declared first, then by creation. Keys revoked or expired longer ago than the
   * retention period are deleted first, so revoking a key takes it out of the listings in time.
   */
  list(now = Date.now()): ApiKey[] {
    if (this.purge(now) > 0) this.changed();
    const rows = this.db
      .prepare<[], KeyRow>("SELECT * FROM api_keys ORDER BY created_at_ms, tenant_id, id")
      .all();
    return [...this.configured.values(), ...rows.map(fromRow)];
  }

  /**
   * Revokes `tenant`'s key created with `wayfind keys create` or KeyService; true if it was active.
   * Keys declared in the config are revoked by removing them from it.
   */
  revoke(tenant: string, id: string, now = Date.now()): boolean {
    if (this.configuredById.has(scoped(tenant, id)))
      throw new WayfindError(
        "failed_precondition",
        `key ${JSON.stringify(id)} is declared in the config file (auth.api_keys); remove it there and restart`,
      );
    const result = this.db
      .prepare(
        "UPDATE api_keys SET revoked_at_ms = ? WHERE tenant_id = ? AND id = ? AND revoked_at_ms IS NULL",
      )
      .run(now, tenant, id);
    this.changed();
    if (result.changes > 0) return true;
    if (this.byId.get(tenant, id)) return false;
    throw new WayfindError(
      "not_found",
      `no key with id ${JSON.stringify(id)}; "wayfind keys list" shows them`,
    );
  }

  /** Deletes the keys revoked or expired more than the retention period ago; how many. */
  private purge(now: number): number {
    const before = now - this.retentionMs;
    return this.db
      .prepare("DELETE FROM api_keys WHERE revoked_at_ms < ? OR expires_at_ms < ?")
      .run(before, before).changes;
  }

  private changed(): void {
    this.ownWrites++;
    this.cache.clear();
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
