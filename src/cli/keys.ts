import { join } from "node:path";
import { type ApiKey, ApiKeyStore } from "../auth/index.ts";
import { isRole, ROLES, type Role } from "../caller/caller.ts";
import type { WayfindConfig } from "../config/index.ts";
import { openDatabase } from "../database/sqlite.ts";
import { allMigrations } from "../server/migrations.ts";
import { commandArgs, UsageError, unknownWord } from "./args.ts";

const USAGE = `Usage:
  wayfind keys create --tenant T --role R [--role R…] [options]
  wayfind keys list [--data-dir DIR | --config FILE]
  wayfind keys revoke ID [--tenant T] [--data-dir DIR | --config FILE]

Manages API keys. A key binds a tenant (none only for an admin: the operator), roles (agent,
observer, admin), and optionally projects and entitlements. "create" prints the secret once, alone
on stdout (KEY=$(wayfind keys create …)); only its SHA-256 is stored. Keys live in the server's data
folder and a running server sees a new or revoked key on its next call (and closes the streams and
MCP sessions of a revoked one). Key ids are unique within a tenant: "revoke" needs --tenant when
several tenants have a key of that id. Over the API, an admin manages the same keys with
wayfind.v1.KeyService.

Options:
  --tenant T          tenant the key acts for (revoke: whose key; "" for an operator key)
  --role R            agent | observer | admin (repeat for several)
  --project P         limit the key to project P (repeat for several)
  --entitlement E     an entitlement the key holds (repeat for several)
  --id ID             the key's id (default: random)
  --expires-in D      expire after D: a number and s, m, h or d (e.g. 90d)
  --data-dir DIR      the server's data folder (default: the config's, else $WAYFIND_DATA_DIR, else
                      ./.wayfind)
  --config FILE       read the data folder from this config
  -h, --help          this help
`;

const DURATION = /^(\d+)([smhd])$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `wayfind keys create|list|revoke`. */
export function runKeys(
  args: string[],
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  loadConfig: (file: string | undefined) => WayfindConfig,
): number {
  const [action, ...afterAction] = args;
  // `revoke ID`: the one positional argument.
  const id =
    action === "revoke" && afterAction[0] && !afterAction[0].startsWith("-") ? afterAction[0] : undefined;
  const rest = id === undefined ? afterAction : afterAction.slice(1);
  const values = commandArgs(`keys ${action ?? ""}`.trim(), USAGE, rest, {
    tenant: { type: "string" },
    role: { type: "string", multiple: true },
    project: { type: "string", multiple: true },
    entitlement: { type: "string", multiple: true },
    id: { type: "string" },
    "expires-in": { type: "string" },
    "data-dir": { type: "string" },
    config: { type: "string" },
  });
  if (!values) return 0;
  const config = values.config ? loadConfig(values.config) : undefined;
  const dataDir =
    values["data-dir"] ?? config?.server.dataDir ?? (process.env.WAYFIND_DATA_DIR || ".wayfind");
  const open = () => {
    const db = openDatabase(join(dataDir, "wayfind.db"), allMigrations);
    return { db, store: new ApiKeyStore(db, config?.auth.apiKeys ?? [], config?.auth.keyRetentionDays) };
  };
  switch (action) {
    case "create": {
      const roles = (values.role ?? []).map(parseRole);
      if (roles.length === 0)
        throw new UsageError(`wayfind keys create: give at least one --role\n\n${USAGE}`);
      const { db, store } = open();
      try {
        const { key, secret } = store.create({
          id: values.id,
          tenant: values.tenant ?? "",
          roles,
          projects: values.project ?? [],
          entitlements: values.entitlement ?? [],
          expiresAtMs:
            values["expires-in"] === undefined ? undefined : Date.now() + durationMs(values["expires-in"]),
        });
        out.write(`${secret}\n`);
        err.write(
          `created key ${describe(key)}\nthe secret above is shown only this once; only its SHA-256 is stored\n`,
        );
      } finally {
        db.close();
      }
      return 0;
    }
    case "list": {
      const { db, store } = open();
      try {
        const keys = store.list();
        if (keys.length === 0)
          out.write("no keys; create one with: wayfind keys create --tenant T --role agent\n");
        for (const key of keys) out.write(`${describe(key)}\n`);
      } finally {
        db.close();
      }
      return 0;
    }
    case "revoke": {
      if (id === undefined) throw new UsageError(`wayfind keys revoke: name the key's ID\n\n${USAGE}`);
      const { db, store } = open();
      try {
        const tenant = values.tenant ?? onlyTenantWithId(store.withId(id), id);
        out.write(store.revoke(tenant, id) ? `revoked ${id}\n` : `${id} was already revoked\n`);
      } finally {
        db.close();
      }
      return 0;
    }
    default:
      throw unknownWord("wayfind keys", action, ["create", "list", "revoke"], USAGE);
  }
}

/** The tenant of the one key with this id; a usage error when several tenants have one. */
function onlyTenantWithId(keys: readonly ApiKey[], id: string): string {
  if (keys.length <= 1) return keys[0]?.tenant ?? "";
  const tenants = keys.map((key) => JSON.stringify(key.tenant)).join(", ");
  throw new UsageError(
    `wayfind keys revoke: keys of tenants ${tenants} have id ${id}; say whose with --tenant`,
  );
}

function parseRole(text: string): Role {
  if (isRole(text)) return text;
  throw new UsageError(`wayfind keys create: --role ${text} is not one of ${ROLES.join(", ")}\n\n${USAGE}`);
}

function durationMs(text: string): number {
  const match = DURATION.exec(text);
  if (!match || Number(match[1]) === 0)
    throw new UsageError(
      `wayfind keys create: --expires-in ${text}: give a number and s, m, h or d, e.g. 90d\n\n${USAGE}`,
    );
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

/** One line per key: never the secret or its hash. */
function describe(key: ApiKey): string {
  const state =
    key.revokedAtMs !== undefined
      ? `revoked ${iso(key.revokedAtMs)}`
      : key.expiresAtMs !== undefined && key.expiresAtMs <= Date.now()
        ? `expired ${iso(key.expiresAtMs)}`
        : key.expiresAtMs !== undefined
          ? `active until ${iso(key.expiresAtMs)}`
          : "active";
  const parts = [
    key.id,
    `tenant=${key.tenant || "(operator)"}`,
    `roles=${key.roles.join(",")}`,
    ...(key.projects.length > 0 ? [`projects=${key.projects.join(",")}`] : []),
    ...(key.entitlements.length > 0 ? [`entitlements=${key.entitlements.join(",")}`] : []),
    key.origin === "config" ? "from=config" : `created=${iso(key.createdAtMs ?? 0)}`,
    state,
  ];
  return parts.join("  ");
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
