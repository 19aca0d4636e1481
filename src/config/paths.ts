import { homedir } from "node:os";
import { resolve } from "node:path";

// Paths in the config: `~` is the home folder, and a relative path starts at a folder (the config
// file's for the file's keys, the working directory for environment and flags).

/** Makes a path from the config file absolute (sections.ts: against the file's folder, `~` expanded). */
export type PathResolver = (path: string) => string;

export function expandHome(p: string): string {
  return p === "~" || p.startsWith("~/") ? homedir() + p.slice(1) : p;
}

export function resolvePath(base: string, p: string): string {
  return resolve(base, expandHome(p));
}
