import { randomBytes } from "node:crypto";
import { type ApiKeyConfig, DEFAULTS, type GrantConfig } from "../config/index.ts";
import type { Db } from "../database/sqlite.ts";
import { writeTransaction } from "../database/transaction.ts";
import { invalidArgument, WayfindError } from "../errors.ts";
import {
  API_KEY_PREFIX,
  type ApiKey,
  apiKeySha256,
  configuredKey,
  isKeyId,
  type KeyRow,
  keyFromRow,
  MAX_KEY_EXPIRY_MS,
} from "./api-keys.ts";

const DAY_MS = 86_400_000;

/** A key to create: what it grants, its id and expiry. */
export interface NewApiKey extends GrantConfig {
  /** undefined = a random id. */
  readonly id?: string | undefined;
  readonly expiresAtMs?: number | undefined;
}

/** A key to store: its grants as stored, and the SHA-256 of its secret (never the secret). */
export type NewKeyRow = Omit<KeyRow, "created_at_ms" | "revoked_at_ms">;

/**
 * Where created keys are kept: the data folder's SQLite (one server: LocalKeyRecords), or the
 * fleet's PostgreSQL, which every replica's copy follows (src/auth/shared-keys.ts). Keys revoked or
 * expired before `purgeBeforeMs` are deleted by `list` and `insert`.
 */
export interface KeyRecords {
  /** Where, for people: "this data folder" or the fleet's database. */
  readonly where: string;
  list(purgeBeforeMs: number): Promise<KeyRow[]>;
  /** The key of `tenant` with this id, whatever its state. */
  get(tenant: string, id: string): Promise<KeyRow | undefined>;
  /** Every tenant's key with this id. */
  withId(id: string): Promise<KeyRow[]>;
  /** Stores the key, created now; undefined when its tenant has a key of that id already. */
  insert(row: NewKeyRow, purgeBeforeMs: number): Promise<KeyRow | undefined>;
  /** Revokes it now: "revoked", "already" (revoked before) or "missing". */
  revoke(tenant: string, id: string): Promise<"revoked" | "already" | "missing">;
}

/**
 * API keys as an operator manages them (`wayfind keys`, KeyService through src/auth/key-admin.ts):
 * those the config declares, read-only, plus the created ones in `records`. A key id is unique
 * within its tenant. Revoked and expired keys are deleted once `retentionDays` have passed.
 */
export class KeyBook {
  private readonly configured: readonly ApiKey[];
  private readonly retentionMs: number;

  constructor(
    private readonly records: KeyRecords,
    configured: readonly ApiKeyConfig[] = [],
    retentionDays: number = DEFAULTS.auth.keyRetentionDays,
  ) {
    this.configured = configured.map(configuredKey);
    this.retentionMs = retentionDays * DAY_MS;
  }

  /** Where the created keys are kept (for people). */
  get where(): string {
    return this.records.where;
  }

  /**
   * Every key, config-declared first, then by creation. Keys revoked or expired longer ago than the
   * retention period are deleted first, so revoking a key takes it out of the listings in time.
   */
  async list(now = Date.now()): Promise<ApiKey[]> {
    const rows = await this.records.list(now - this.retentionMs);
    return [...this.configured, ...rows.map(keyFromRow)];
  }

  /** The key of `tenant` with this id, whatever its state; undefined = no such key. */
  async get(tenant: string, id: string): Promise<ApiKey | undefined> {
    const configured = this.configured.find((key) => key.tenant === tenant && key.id === id);
    if (configured) return configured;
    const row = await this.records.get(tenant, id);
    return row && keyFromRow(row);
  }

  /** Every tenant's keys with this id (the operator names a key by id, and by tenant where two share it). */
  async withId(id: string): Promise<ApiKey[]> {
    const rows = await this.records.withId(id);
    return [...this.configured.filter((key) => key.id === id), ...rows.map(keyFromRow)];
  }

  /** Creates a key; the secret is returned here once and never stored. */
  async create(key: NewApiKey, now = Date.now()): Promise<{ key: ApiKey; secret: string }> {
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
    const exists = () =>
      new WayfindError("already_exists", `a key with id ${JSON.stringify(id)} exists; choose another id`);
    if (this.configured.some((configured) => configured.tenant === key.tenant && configured.id === id))
      throw exists();
    const secret = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
    const row = await this.records.insert(
      {
        id,
        key_sha256: apiKeySha256(secret),
        tenant_id: key.tenant,
        roles_json: JSON.stringify([...new Set(key.roles)]),
        entitlements_json: JSON.stringify(key.entitlements),
        projects_json: JSON.stringify(key.projects),
        expires_at_ms: key.expiresAtMs ?? null,
      },
      now - this.retentionMs,
    );
    if (row === undefined) throw exists();
    return { key: keyFromRow(row), secret };
  }

  /**
   * Revokes `tenant`'s key created with `wayfind keys create` or KeyService; true if it was active.
   * Keys declared in the config are revoked by removing them from it.
   */
  async revoke(tenant: string, id: string): Promise<boolean> {
    if (this.configured.some((key) => key.tenant === tenant && key.id === id))
      throw new WayfindError(
        "failed_precondition",
        `key ${JSON.stringify(id)} is declared in the config file (auth.api_keys); remove it there and restart`,
      );
    const outcome = await this.records.revoke(tenant, id);
    if (outcome === "missing")
      throw new WayfindError(
        "not_found",
        `no key with id ${JSON.stringify(id)}; "wayfind keys list" shows them`,
      );
    return outcome === "revoked";
  }
}

/**
 * Created keys in a server's own SQLite (its data folder, without storage.postgres). `onChanged`
 * tells the server's ApiKeyStore of writes made on its own connection.
 */
export class LocalKeyRecords implements KeyRecords {
  readonly where = "this data folder";
  private readonly byId;
  private readonly sameId;
  private readonly all;
  private readonly insertRow;
  private readonly revokeRow;
  private readonly purgeRows;

  constructor(
    private readonly db: Db,
    private readonly onChanged: () => void = () => {},
    /** The clock (epoch ms) keys are created and revoked at. */
    private readonly now: () => number = Date.now,
  ) {
    this.byId = db.prepare<[string, string], KeyRow>("SELECT * FROM api_keys WHERE tenant_id = ? AND id = ?");
    this.sameId = db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE id = ? ORDER BY tenant_id");
    this.all = db.prepare<[], KeyRow>("SELECT * FROM api_keys ORDER BY created_at_ms, tenant_id, id");
    this.insertRow = db.prepare(
      `INSERT INTO api_keys (id, key_sha256, tenant_id, roles_json, entitlements_json, projects_json,
         created_at_ms, expires_at_ms)
       VALUES (@id, @key_sha256, @tenant_id, @roles_json, @entitlements_json, @projects_json,
         @created_at_ms, @expires_at_ms)`,
    );
    this.revokeRow = db.prepare<[number, string, string]>(
      "UPDATE api_keys SET revoked_at_ms = ? WHERE tenant_id = ? AND id = ? AND revoked_at_ms IS NULL",
    );
    this.purgeRows = db.prepare<[number, number]>(
      "DELETE FROM api_keys WHERE revoked_at_ms < ? OR expires_at_ms < ?",
    );
  }

  async list(purgeBeforeMs: number): Promise<KeyRow[]> {
    if (this.purgeRows.run(purgeBeforeMs, purgeBeforeMs).changes > 0) this.onChanged();
    return this.all.all();
  }

  async get(tenant: string, id: string): Promise<KeyRow | undefined> {
    return this.byId.get(tenant, id);
  }

  async withId(id: string): Promise<KeyRow[]> {
    return this.sameId.all(id);
  }

  async insert(row: NewKeyRow, purgeBeforeMs: number): Promise<KeyRow | undefined> {
    const inserted = writeTransaction(this.db, () => {
      this.purgeRows.run(purgeBeforeMs, purgeBeforeMs);
      if (this.byId.get(row.tenant_id, row.id)) return false;
      this.insertRow.run({ ...row, created_at_ms: this.now() });
      return true;
    });
    this.onChanged();
    return inserted ? this.byId.get(row.tenant_id, row.id) : undefined;
  }

  async revoke(tenant: string, id: string): Promise<"revoked" | "already" | "missing"> {
    const revoked = this.revokeRow.run(this.now(), tenant, id).changes > 0;
    this.onChanged();
    if (revoked) return "revoked";
    return this.byId.get(tenant, id) ? "already" : "missing";
  }
}
