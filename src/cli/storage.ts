import type { WayfindConfig } from "../config/index.ts";
import { type CopiedState, copyToPostgres } from "../server/copy-to-postgres.ts";
import { redactedUrl } from "../server/storage.ts";
import { commandArgs, UsageError, unknownWord } from "./args.ts";

const USAGE = `Usage: wayfind storage copy-to-postgres [--data-dir DIR] [--config FILE]

Moves one server's state from its SQLite data folder onto a new, empty PostgreSQL database, so a
fleet of replicas (storage.postgres) starts from it: registered tools, skill packs, activations,
API keys, learning, events and the usage ledger, all or nothing. Stop the server first. The data
folder is left as it was: serving it again without storage.postgres goes back. The database is
named by storage.postgres in --config FILE, or by WAYFIND_DATABASE_URL; one that already holds
a fleet's state is refused.

Options:
  --data-dir DIR   the server's data folder (default: the config's, else $WAYFIND_DATA_DIR, else
                   ./.wayfind)
  --config FILE    the fleet's configuration (storage.postgres; its server.data_dir when no
                   --data-dir is given)
  -h, --help       this help
`;

/** `wayfind storage copy-to-postgres`. */
export async function runStorage(
  args: string[],
  out: NodeJS.WritableStream,
  loadConfig: (file: string | undefined) => WayfindConfig,
): Promise<number> {
  const [action, ...rest] = args;
  if (action === "--help" || action === "-h") {
    out.write(USAGE);
    return 0;
  }
  if (action !== "copy-to-postgres")
    throw unknownWord("wayfind storage", action, ["copy-to-postgres"], USAGE);
  const values = commandArgs("storage copy-to-postgres", USAGE, rest, {
    "data-dir": { type: "string" },
    config: { type: "string" },
  });
  if (!values) return 0;
  const config = values.config || process.env.WAYFIND_DATABASE_URL ? loadConfig(values.config) : undefined;
  const postgres = config?.storage.postgres;
  if (postgres === undefined)
    throw new UsageError(
      "wayfind storage copy-to-postgres: name the new database: storage.postgres in --config FILE, or WAYFIND_DATABASE_URL\n\n" +
        USAGE,
    );
  const dataDir =
    values["data-dir"] ??
    (values.config ? config?.server.dataDir : undefined) ??
    (process.env.WAYFIND_DATA_DIR || ".wayfind");
  const where = redactedUrl(postgres.url);
  const copied = await copyToPostgres(dataDir, postgres);
  out.write(`copied ${dataDir} into ${where}:\n  ${describe(copied)}\n`);
  out.write(
    `  a snapshot of ${kib(copied.snapshotBytes)}: every replica started on this database begins from it\n` +
      `${dataDir} is unchanged: serving it again without storage.postgres goes back\n`,
  );
  return 0;
}

function describe(copied: CopiedState): string {
  const parts: [number, string][] = [
    [copied.tools, "tools"],
    [copied.skillPacks, "skill packs"],
    [copied.activations, "activations"],
    [copied.apiKeys, "API keys"],
    [copied.usageRecords, "usage records"],
    [copied.events, "events"],
    [copied.learnedRequests, "learned requests"],
  ];
  return parts.map(([n, what]) => `${what}: ${n}`).join(", ");
}

function kib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}
