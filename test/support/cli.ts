import { type ChildProcessByStdio, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";

/** The installed command a user runs. */
export const CLI = join(import.meta.dirname, "..", "..", "bin", "wayfind.js");

export interface CliRun {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  readonly stderr: string[];
  /** The exit code, or null when a signal ended it. */
  readonly exited: Promise<number | null>;
}

/** Runs `wayfind <args>` as a child process, the way a user does, with `env` added to this one's. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): CliRun {
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  const stderr: string[] = [];
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, stderr, exited };
}

/** What `wayfind serve`'s "listening" line says: the bound port and the console's address. */
export interface ListeningLine {
  readonly port: number;
  readonly console: string | undefined;
}

/**
 * Reads `wayfind serve`'s JSON log until its "listening" line (port 0 if it never came). The rest of
 * the log is drained unread, so a busy server never blocks on a full pipe.
 */
export async function listeningLine(run: CliRun): Promise<ListeningLine> {
  let found: ListeningLine = { port: 0, console: undefined };
  for await (const line of createInterface({ input: run.child.stdout })) {
    const entry = JSON.parse(line) as { msg: string; port?: number; console?: string };
    if (entry.msg === "listening") {
      found = { port: entry.port ?? 0, console: entry.console };
      break;
    }
  }
  run.child.stdout.resume();
  return found;
}

/** The port of `wayfind serve`'s "listening" line (0 if it never came); see listeningLine. */
export async function listeningPort(run: CliRun): Promise<number> {
  return (await listeningLine(run)).port;
}
