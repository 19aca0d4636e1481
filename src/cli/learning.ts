import { readFileSync } from "node:fs";
import { join } from "node:path";
import { didYouMean } from "../config/errors.ts";
import type { WayfindConfig } from "../config/index.ts";
import { openDatabase } from "../database/sqlite.ts";
import { type LearnedRequest, LearningStore } from "../learning/index.ts";
import { LogAppender } from "../replication/log-appender.ts";
import { LocalWriter } from "../replication/writes.ts";
import { allMigrations } from "../server/migrations.ts";
import { commandArgs, UsageError, unknownWord } from "./args.ts";

const USAGE = `Usage:
  wayfind learning show --tenant T [--tool X] [--limit N] [--data-dir DIR | --config FILE]
  wayfind learning reset --tenant T [--tool X] [--data-dir DIR | --config FILE]
  wayfind learning export --tenant T [--data-dir DIR | --config FILE] > learned.jsonl
  wayfind learning import --tenant T FILE [--data-dir DIR | --config FILE]

What a tenant's traffic taught its search (docs/search.md "Learning from use"): each learned request
with the tool it leads to and its weight (choices, decayed by age; negative = the tool was wrong for
it). "reset" forgets them (of one tool with --tool); "export" prints them as JSON lines that "import"
adds to a tenant (of this server or another). A running server on the same data folder sees the
change on its next search. With the state on PostgreSQL (storage.postgres, WAYFIND_DATABASE_URL),
"reset" and "import" go through the shared log instead, and every replica applies them; "show" and
"export" read the data folder's copy. The tenant "" is the calls that name none.

Options:
  --tenant T          the tenant (required; "" for calls without one)
  --tool X            only this tool
  --limit N           show at most N requests (default 50)
  --data-dir DIR      the server's data folder (default: the config's, else ./.wayfind)
  --config FILE       read the data folder and learning settings from this config
  -h, --help          this help
`;

/** `wayfind learning show|reset|export|import`. */
export async function runLearning(
  args: string[],
  out: NodeJS.WritableStream,
  loadConfig: (file: string | undefined) => WayfindConfig,
): Promise<number> {
  const [action, ...afterAction] = args;
  const file =
    action === "import"
      ? afterAction.find((a, i) => !a.startsWith("-") && !isValueOf(afterAction, i))
      : undefined;
  const rest = file === undefined ? afterAction : afterAction.filter((a) => a !== file);
  const values = commandArgs(`learning ${action ?? ""}`.trim(), USAGE, rest, {
    tenant: { type: "string" },
    tool: { type: "string" },
    limit: { type: "string" },
    "data-dir": { type: "string" },
    config: { type: "string" },
  });
  if (!values) return 0;
  if (!["show", "reset", "export", "import"].includes(action ?? ""))
    throw unknownWord("wayfind learning", action, ["show", "reset", "export", "import"], USAGE);
  if (values.tenant === undefined)
    throw new UsageError(`wayfind learning ${action}: give --tenant (or --tenant "" for none)\n\n${USAGE}`);
  const tenant = values.tenant;
  const config = loadConfig(values.config);
  const dataDir = values["data-dir"] ?? config.server.dataDir;
  const db = openDatabase(join(dataDir, "wayfind.db"), allMigrations);
  const postgres = config.storage.postgres;
  // On PostgreSQL a change goes through the shared log: every replica applies it, this copy too.
  const shared =
    postgres && (action === "reset" || action === "import") ? await LogAppender.open(postgres) : undefined;
  const store = new LearningStore(db, shared ?? new LocalWriter(db), config.learning, () => {}, undefined);
  const through = () =>
    shared ? ` (change ${shared.appended.join(", ")} of the shared log: every replica applies it)` : "";
  /** "; did you mean X?" for a --tool that names none of the tools the tenant learned of, but nearly one. */
  const toolMeant = (tool: string): string => {
    const meant = didYouMean(tool, [...new Set(store.read(tenant, Date.now()).map((entry) => entry.tool))]);
    return meant ? `; did you mean ${meant}?` : "";
  };
  try {
    const learned = () =>
      store
        .read(tenant, Date.now())
        .filter((entry) => values.tool === undefined || entry.tool === values.tool);
    switch (action) {
      case "show": {
        const limit = values.limit === undefined ? 50 : Number(values.limit);
        if (!Number.isInteger(limit) || limit < 1)
          throw new UsageError(`wayfind learning show: --limit ${values.limit} is not a whole number ≥ 1`);
        const entries = learned().sort((a, b) => b.weight - a.weight);
        if (entries.length === 0)
          out.write(
            `tenant ${JSON.stringify(tenant)} has learned nothing${values.tool ? ` of ${values.tool}${toolMeant(values.tool)}` : ""}\n`,
          );
        for (const entry of entries.slice(0, limit))
          out.write(
            `${entry.weight.toFixed(2).padStart(6)}  ${entry.tool}  ← ${JSON.stringify(entry.request)}\n`,
          );
        if (entries.length > limit) out.write(`… and ${entries.length - limit} more (--limit)\n`);
        return 0;
      }
      case "reset":
        if (values.tool !== undefined && learned().length === 0) {
          out.write(
            `tenant ${JSON.stringify(tenant)} has learned nothing of ${values.tool}${toolMeant(values.tool)}; nothing was reset\n`,
          );
          return 1;
        }
        await store.reset(tenant, values.tool ?? "");
        out.write(
          `tenant ${JSON.stringify(tenant)}: forgot what it learned${values.tool ? ` of ${values.tool}` : ""}${through()}\n`,
        );
        return 0;
      case "export":
        for (const entry of learned()) out.write(`${JSON.stringify(entry)}\n`);
        return 0;
      default: {
        if (file === undefined)
          throw new UsageError(`wayfind learning import: name the FILE of JSON lines\n\n${USAGE}`);
        const entries = parseExport(readFileSync(file, "utf8"), file);
        await store.import(tenant, entries);
        out.write(
          `tenant ${JSON.stringify(tenant)}: imported ${entries.length} learned requests${through()}\n`,
        );
        return 0;
      }
    }
  } finally {
    db.close();
    await shared?.close();
  }
}

/** Whether args[i] is the value of the option before it (options here all take a value). */
function isValueOf(args: readonly string[], i: number): boolean {
  return i > 0 && (args[i - 1] ?? "").startsWith("--") && !(args[i - 1] ?? "").includes("=");
}

/** `wayfind learning export` lines, each checked: a bad line names its number and what to fix. */
function parseExport(text: string, file: string): LearnedRequest[] {
  const entries: LearnedRequest[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new UsageError(`${file}:${i + 1}: not JSON; each line is {"tool", "request", "weight"}`);
    }
    const { tool, request, weight } = (value ?? {}) as Record<string, unknown>;
    if (
      typeof tool !== "string" ||
      tool === "" ||
      typeof request !== "string" ||
      request === "" ||
      typeof weight !== "number" ||
      !Number.isFinite(weight)
    )
      throw new UsageError(
        `${file}:${i + 1}: needs "tool" and "request" (non-empty text) and "weight" (a number)`,
      );
    entries.push({ tool, request: request.slice(0, 512), weight });
  });
  return entries;
}
