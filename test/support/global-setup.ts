import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildConsole } from "../../scripts/console-build.js";
import { stopClustersUnder } from "./postgres.ts";

/**
 * One folder per `vitest run` for the PostgreSQL clusters tests start (test/support/postgres.ts puts
 * them there; the test processes inherit the variable). Teardown stops whatever is still running in
 * it, whether its suite passed, failed or timed out, and says so: a suite that leaves its server
 * running is a bug to fix, but it must not leave PostgreSQL behind on the machine. First, the web
 * console is bundled.
 */
export default async function setup(): Promise<() => Promise<void>> {
  // The console the servers serve (dist/console), from the sources as they are: a test never drives
  // a bundle older than the code it tests.
  await buildConsole();
  const root = mkdtempSync(join(tmpdir(), "wayfind-test-run-"));
  // As root, clusters run as another user (test/support/postgres.ts), who must be able to enter it.
  chmodSync(root, 0o755);
  process.env.WAYFIND_TEST_PG_ROOT = root;
  return async () => {
    const leftOver = await stopClustersUnder(root);
    if (leftOver > 0) console.warn(`global teardown: stopped ${leftOver} PostgreSQL server(s) left running`);
    rmSync(root, { recursive: true, force: true });
  };
}
