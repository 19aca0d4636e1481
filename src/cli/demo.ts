import { existsSync, readdirSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { lockDataFolder } from "../server/data-lock.ts";
import { commandArgs, unknownWord } from "./args.ts";

const USAGE = `Usage: wayfind demo reset [--data-dir DIR]

Deletes the demo server's data (its SQLite database: registered tools, activations, usage, events),
so the next \`wayfind serve\` starts from the demo catalog and skill pack again. Refuses while a server
uses the folder, and refuses a folder that is not a wayfind data folder.

Options:
  --data-dir DIR   the data folder (default ./.wayfind, where \`npm start\` keeps it)
  -h, --help       this help
`;

/** `wayfind demo reset`: the demo data folder removed, if it is one and no server holds it. */
export function runDemo(args: string[], out: NodeJS.WritableStream): number {
  if (args[0] !== "reset") throw unknownWord("wayfind demo", args[0], ["reset"], USAGE);
  const values = commandArgs("demo reset", USAGE, args.slice(1), { "data-dir": { type: "string" } });
  if (!values) return 0;
  const dir = resolve(values["data-dir"] ?? ".wayfind");
  if (!existsSync(dir)) {
    out.write(`nothing to reset: ${dir} does not exist\n`);
    return 0;
  }
  const entries = readdirSync(dir);
  if (entries.length > 0 && !entries.includes("wayfind.db"))
    throw new Error(`${dir} holds no wayfind.db, so it is not a wayfind data folder; nothing was deleted`);
  // Taking the lock proves no server uses the folder (it throws naming the one that does).
  const release = lockDataFolder(dir);
  release();
  rmSync(dir, { recursive: true, force: true });
  out.write(`reset: deleted ${dir}; the next \`wayfind serve\` starts from the demo data\n`);
  return 0;
}
