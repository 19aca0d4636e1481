import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { LOCK_FILE } from "../../src/server/data-lock.ts";
import { runCli } from "../support/cli.ts";
import { startTestServer } from "../support/server.ts";

const freshDir = () => mkdtempSync(join(tmpdir(), "wayfind-lock-"));

describe("one server per data folder", () => {
  it("refuses a second server on the folder, and the first keeps serving", async () => {
    const dataDir = freshDir();
    const first = await startTestServer({}, { dataDir });
    try {
      await expect(startTestServer({}, { dataDir })).rejects.toThrow(/data folder .* is in use/);
      const answer = await first.grpc(ToolDiscoveryService).listTools({});
      expect(answer.totalCount).toBeGreaterThanOrEqual(0);
    } finally {
      await first.stop({ keepData: true });
    }
    // Released on stop: the folder can be served again.
    const again = await startTestServer({}, { dataDir });
    await again.stop();
  });

  it("refuses another wayfind process on the folder, naming the holder's PID", async () => {
    const dataDir = freshDir();
    const holder = await startTestServer({}, { dataDir });
    try {
      const { stderr, exited } = runCli(["serve", "--port", "0", "--data-dir", dataDir]);
      expect(await exited).toBe(1);
      expect(stderr.join("")).toContain(`in use by wayfind process ${process.pid}`);
    } finally {
      await holder.stop();
    }
  });

  it("takes over a lock left by a process that no longer runs", async () => {
    const dataDir = freshDir();
    const gone = spawnSync(process.execPath, ["-e", "0"]).pid;
    writeFileSync(join(dataDir, LOCK_FILE), `${gone}\n`);
    const server = await startTestServer({}, { dataDir });
    await server.stop();
  });
});

describe("a port in use", () => {
  it("fails the start before anything is loaded or created", async () => {
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const port = (squatter.address() as { port: number }).port;
    const dataDir = freshDir();
    try {
      await expect(startTestServer({ server: { port } }, { dataDir })).rejects.toThrow(
        `port ${port} on 127.0.0.1 is in use`,
      );
      expect(existsSync(join(dataDir, "wayfind.db"))).toBe(false);
      expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    } finally {
      squatter.close();
    }
  });
});
