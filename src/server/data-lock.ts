import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The lock file in a data folder: the PID of the server that owns the folder. */
export const LOCK_FILE = "wayfind.lock";

/** Lock files this process holds (a second server in the same process is refused too). */
const held = new Set<string>();

/**
 * One server per data folder: two would each keep their own in-memory index and event cursor over
 * one database and corrupt each other's event log. Takes the folder's lock file, or throws naming the
 * process that holds it; a lock left by a process that no longer runs is taken over. Returns the
 * release (the server calls it when it stops).
 */
export function lockDataFolder(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCK_FILE);
  if (held.has(file))
    throw new Error(`the data folder ${dataDir} is in use by another server in this process (${file})`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx");
      writeFileSync(fd, `${process.pid}\n`);
      closeSync(fd);
      held.add(file);
      return () => {
        held.delete(file);
        rmSync(file, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number.parseInt(readFileSync(file, "utf8"), 10);
      if (Number.isInteger(holder) && holder !== process.pid && isRunning(holder))
        throw new Error(
          `the data folder ${dataDir} is in use by wayfind process ${holder} (${file}); ` +
            "stop it, or give this server another --data-dir",
        );
      // Left behind by a process that died (or by an earlier server of this one): take it over.
      rmSync(file, { force: true });
    }
  }
  throw new Error(`could not take the lock file ${file}`);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
