import { join } from "node:path";
import { type ApiKey, KeyBook, LocalKeyRecords, SharedKeyRecords } from "../auth/index.ts";
import { isRole, ROLES, type Role } from "../caller/caller.ts";
import type { WayfindConfig } from "../config/index.ts";
import { openDatabase } from "../database/sqlite.ts";
import { LogAppender } from "../replication/log-appender.ts";
import { allMigrations } from "../server/migrations.ts";
import { redactedUrl } from "../server/storage.ts";
import { commandArgs, UsageError, unknownWord } from "./args.ts";

const USAGE = `Usage:
  wayfind keys create --tenant T --role R [--role R…] [options]
  wayfind keys list [--data-dir DIR | --config FILE]
  wayfind keys revoke ID [--tenant T] [--data-dir DIR | --config FILE]

Manages API keys. A key binds a tenant (none only for an admin: the operator), roles (agent,
observer, admin), and optionally projects and entitlements. "create" prints the secret once, alone
on stdout (KEY=$(wayfind keys create …)); only its SHA-256 is stored. Keys live in the server's data
folder and a running server sees a new or revoked key on its next call (and closes the streams and
MCP sessions of a revoked one). With the state on PostgreSQL (storage.postgres in --config, or
WAYFIND_DATABASE_URL) the keys are the fleet's: they are changed in the shared database and every
replica applies the change within a second (stderr says so). Key ids are unique within a tenant:
"revoke" needs --tenant when several tenants have a key of that id. Over the API, an admin manages
the same keys with wayfind.v1.KeyService.

Options:
  --tenant T          tenant the key acts for (revoke: whose key; "" for an operator key)
  --role R            agent | observer | admin (repeat for several)
  --project P         limit the key to project P (repeat for several)
  --entitlement E     an entitlement the key holds (repeat for several)
  --id ID             the key's id (default: random)
  --expires-in D      expire after D: a number and s, m, h or d (e.g. 90d)
  --data-dir DIR      the server's data folder (default: the config's, else $WAYFIND_DATA_DIR, else
                      ./.wayfind)
  --config FILE       read the data folder (or the fleet's storage.postgres) from this config
  -h, --help          this help
`;

const DURATION = /^(\d+)([smhd])$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `wayfind keys create|list|revoke`. */
export async function runKeys(
  args: string[],
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  loadConfig: (file: string | undefined) => WayfindConfig,
): Promise<number> {
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
  if (action === undefined || !["create", "list", "revoke"].includes(action))
    throw unknownWord("wayfind keys", action, ["create", "list", "revoke"], USAGE);
  if (action === "revoke" && id === undefined)
    throw new UsageError(`wayfind keys revoke: name the key's ID\n\n${USAGE}`);
  const roles = (values.role ?? []).map(parseRole);
  if (action === "create" && roles.length === 0)
    throw new UsageError(`wayfind keys create: give at least one --role\n\n${USAGE}`);
  const expiresInMs = values["expires-in"] === undefined ? undefined : durationMs(values["expires-in"]);
  // The config (given, or the default with WAYFIND_DATABASE_URL) says whether the keys are a fleet's.
  const config = values.config || process.env.WAYFIND_DATABASE_URL ? loadConfig(values.config) : undefined;
  const dataDir =
    values["data-dir"] ??
    (values.config ? config?.server.dataDir : undefined) ??
    (process.env.WAYFIND_DATA_DIR || ".wayfind");
  const { book, fleet, close } = await openBook(config, dataDir);
  try {
    if (fleet)
      err.write(`keys of the fleet on ${book.where}: every replica applies a change within a second\n`);
    switch (action) {
      case "create": {
        const { key, secret } = await book.create({
          id: values.id,
          tenant: values.tenant ?? "",
          roles,
          projects: values.project ?? [],
          entitlements: values.entitlement ?? [],
          expiresAtMs: expiresInMs === undefined ? undefined : Date.now() + expiresInMs,
        });
        out.write(`${secret}\n`);
        err.write(
          `created key ${describe(key)}\nthe secret above is shown only this once; only its SHA-256 is stored\n`,
        );
        return 0;
      }
      case "list": {
        const keys = await book.list();
        if (keys.length === 0)
          out.write("no keys; create one with: wayfind keys create --tenant T --role agent\n");
        for (const key of keys) out.write(`${describe(key)}\n`);
        return 0;
      }
      default: {
        const revoked = id as string;
        const tenant = values.tenant ?? onlyTenantWithId(await book.withId(revoked), revoked);
        out.write(
          (await book.revoke(tenant, revoked)) ? `revoked ${revoked}\n` : `${revoked} was already revoked\n`,
        );
        return 0;
      }
    }
  } finally {
    await close();
  }
}

/**
 * The keys to manage: the fleet's, in the shared PostgreSQL, when the config puts the state there
 * (storage.postgres or WAYFIND_DATABASE_URL); else those of the data folder, unless it is a replica's
 * copy (its keys are the fleet's: changed only through the shared database).
 */
async function openBook(
  config: WayfindConfig | undefined,
  dataDir: string,
): Promise<{ book: KeyBook; fleet: boolean; close: () => Promise<void> }> {
  const apiKeys = config?.auth.apiKeys ?? [];
  const retentionDays = config?.auth.keyRetentionDays;
  const postgres = config?.storage.postgres;
  if (postgres) {
    const appender = await LogAppender.open(postgres);
    try {
      const records = await SharedKeyRecords.open(appender, redactedUrl(postgres.url));
      return {
        book: new KeyBook(records, apiKeys, retentionDays),
        fleet: true,
        close: () => appender.close(),
      };
    } catch (error) {
      await appender.close();
      throw error;
    }
  }
  const db = openDatabase(join(dataDir, "wayfind.db"), allMigrations);
  if (db.prepare("SELECT 1 FROM replication_cluster").get() !== undefined) {
    db.close();
    throw new UsageError(
      `wayfind keys: ${dataDir} is a replica's copy of a fleet on PostgreSQL, whose keys are the fleet's: ` +
        "give the fleet's database with --config FILE (storage.postgres) or WAYFIND_DATABASE_URL\n",
    );
  }
  return {
    book: new KeyBook(new LocalKeyRecords(db), apiKeys, retentionDays),
    fleet: false,
    close: async () => {
      db.close();
    },
  };
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
