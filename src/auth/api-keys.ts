import { createHash } from "node:crypto";
import type { Role } from "../caller/caller.ts";
import type { ApiKeyConfig, GrantConfig } from "../config/index.ts";
import type { Db } from "../database/sqlite.ts";
import { afterCommit } from "../database/transaction.ts";
import type { ReplicatedWrite } from "../replication/writes.ts";

/** Every wayfind API key starts with this, so a leaked one is recognisable (secret scanners, logs). */
export const API_KEY_PREFIX = "wf_";
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The latest expiry a key may have: the last millisecond of year 9999, the latest time a
 * google.protobuf.Timestamp can carry in JSON (Connect JSON, the console). Beyond it a listing of
 * the key could not be encoded.
 */
export const MAX_KEY_EXPIRY_MS = Date.UTC(10_000, 0, 1) - 1;

/**
 * How long a replica trusts its copy of the fleet's keys once the shared database stops confirming
 * it is current (three of the follower's polls): after that a created key might have been revoked
 * elsewhere unseen, so the replica refuses created keys until it has caught up (fail closed).
 */
export const KEY_COPY_TRUSTED_MS = 3_000;

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

/**
 * A created key as stored, in SQLite (a server's data folder, a replica's copy) and in the fleet's
 * PostgreSQL alike, and as the change that carries it to every replica: the SHA-256 of its secret,
 * never the secret.
 */
export interface KeyRow {
  readonly id: string;
  readonly key_sha256: string;
  readonly tenant_id: string;
  readonly roles_json: string;
  readonly entitlements_json: string;
  readonly projects_json: string;
  readonly created_at_ms: number;
  readonly expires_at_ms: number | null;
  readonly revoked_at_ms: number | null;
}

/** The SHA-256 of a key, as stored and as `auth.api_keys[].key_sha256` declares it (lower-case hex). */
export function apiKeySha256(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export function keyFromRow(row: KeyRow): ApiKey {
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

/** A config-declared key as the store lists it. */
export function configuredKey(key: ApiKeyConfig): ApiKey {
  return { ...key, origin: "config", createdAtMs: undefined, revokedAtMs: undefined };
}

/**
 * What a change to the fleet's keys does to every replica's copy (src/auth/shared-keys.ts writes
 * them): the rows as they now are, and the keys deleted (past their retention).
 */
export interface KeysChange {
  readonly put: readonly KeyRow[];
  readonly drop: readonly { readonly tenant_id: string; readonly id: string }[];
}

/** The change kind of KeysChange in the shared log. */
export const KEYS_CHANGE_KIND = "auth/keys";

/** Keys remembered between database changes (hits and misses); beyond this, lookups go to SQLite. */
const CACHED_LOOKUPS = 10_000;

export interface ApiKeyStoreOptions {
  /**
   * Set on a replica, whose table is its copy of the fleet's keys: when its copy was last known to
   * hold every change (Replica.currentAsOfMs). Created keys are trusted for KEY_COPY_TRUSTED_MS
   * after it; undefined = a server's own keys, always current.
   */
  readonly currentAsOfMs?: () => number;
  /** The clock (epoch ms); injectable for tests. */
  readonly now?: () => number;
}

/**
 * The keys a server authenticates with: those the config declares plus the created ones of its
 * table (src/auth/key-book.ts creates and revokes them). Keys are looked up by SHA-256 and
 * remembered until the table changes: SQLite's `data_version` moves when another connection (the
 * CLI, in its own process) commits, and the server's own writes (its own, or a replica applying the
 * fleet's changes) say so, so a created or revoked key takes effect on the next call, for a map
 * lookup per call instead of a query.
 */
export class ApiKeyStore {
  private readonly configured: ReadonlyMap<string, ApiKey>;
  private readonly byHash;
  private readonly dataVersion;
  private readonly upsert;
  private readonly remove;
  private readonly options: ApiKeyStoreOptions;
  private readonly cache = new Map<string, ApiKey | null>();
  private cachedVersion = -1;
  /** Changes made through this connection (its own writes leave `data_version` unchanged). */
  private ownWrites = 0;

  constructor(
    private readonly db: Db,
    configured: readonly ApiKeyConfig[] = [],
    options: ApiKeyStoreOptions = {},
  ) {
    this.options = options;
    this.configured = new Map(configured.map((key) => [key.keySha256, configuredKey(key)]));
    this.byHash = db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE key_sha256 = ?");
    this.dataVersion = db.prepare<[], number>("PRAGMA data_version").pluck();
    this.upsert = db.prepare(
      `INSERT INTO api_keys (id, key_sha256, tenant_id, roles_json, entitlements_json, projects_json,
         created_at_ms, expires_at_ms, revoked_at_ms)
       VALUES (@id, @key_sha256, @tenant_id, @roles_json, @entitlements_json, @projects_json,
         @created_at_ms, @expires_at_ms, @revoked_at_ms)
       ON CONFLICT (tenant_id, id) DO UPDATE SET key_sha256 = excluded.key_sha256,
         roles_json = excluded.roles_json, entitlements_json = excluded.entitlements_json,
         projects_json = excluded.projects_json, created_at_ms = excluded.created_at_ms,
         expires_at_ms = excluded.expires_at_ms, revoked_at_ms = excluded.revoked_at_ms`,
    );
    this.remove = db.prepare<[string, string]>("DELETE FROM api_keys WHERE tenant_id = ? AND id = ?");
  }

  /** True on a replica: the created keys are the fleet's, and this table a copy of them. */
  get shared(): boolean {
    return this.options.currentAsOfMs !== undefined;
  }

  /**
   * Moves whenever a key may have been created, revoked or deleted, by this process or another, or
   * a replica's copy stopped (or started again) being trusted: what was found before may have changed.
   */
  revision(): string {
    const distrusted = this.trusted() ? "" : ":distrusted";
    return `${this.dataVersion.get() ?? 0}:${this.ownWrites}${distrusted}`;
  }

  /**
   * Whether created keys can be judged from this table: always for a server's own keys; on a replica,
   * while its copy was known to be current within KEY_COPY_TRUSTED_MS.
   */
  trusted(): boolean {
    const { currentAsOfMs, now = Date.now } = this.options;
    return currentAsOfMs === undefined || now() - currentAsOfMs() <= KEY_COPY_TRUSTED_MS;
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
    const key = row ? keyFromRow(row) : null;
    if (this.cache.size < CACHED_LOOKUPS) this.cache.set(hash, key);
    return key ?? undefined;
  }

  /** Told after this process changed the table itself (src/auth/key-book.ts's local records). */
  changed(): void {
    this.ownWrites++;
    this.cache.clear();
  }

  /**
   * A change to the fleet's keys, as every replica applies it to its copy (in log order, like every
   * other change): the rows as they now are, and the keys deleted.
   */
  readonly copyWrite: ReplicatedWrite<KeysChange, void> = {
    kind: KEYS_CHANGE_KIND,
    apply: ({ put, drop }) => {
      for (const key of drop) this.remove.run(key.tenant_id, key.id);
      for (const row of put) this.upsert.run(row);
      afterCommit(this.db, () => this.changed());
    },
  };
}
