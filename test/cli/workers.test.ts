import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { apiKey } from "../support/auth.ts";
import { type CliRun, runCli } from "../support/cli.ts";
import { mcpHeaders, modernRequest, openMcpSession } from "../support/mcp-session.ts";
import { isAlive, postgresUnavailable, startPostgres, type TestPostgres } from "../support/postgres.ts";

// Issue 47: `wayfind serve --workers N` serves one port from N processes sharing the state as replicas
// do (storage.postgres). Real processes on a real port and a real PostgreSQL.

/** Runs the CLI to its end: exit code and stderr. */
async function finished(args: string[], env: NodeJS.ProcessEnv = {}) {
  const run = runCli(args, env);
  run.child.stdout.resume();
  return { code: await run.exited, stderr: run.stderr.join("") };
}

/** An HTTP/1.1 request on a connection of its own, so the primary hands each to the next worker. */
function onNewConnection(
  port: number,
  path: string,
  body?: object,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const call = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: body ? "POST" : "GET",
        agent: false,
        headers: { ...(body ? { "content-type": "application/json" } : {}), ...headers },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
        );
      },
    );
    call.on("error", reject);
    call.end(body ? JSON.stringify(body) : undefined);
  });
}

const search = (port: number, query = "weather") =>
  onNewConnection(port, "/wayfind.v1.ToolDiscoveryService/SearchTools", {
    caller: { tenantId: "acme" },
    query,
  });

/** The worker processes of the primary `pid` (Linux: its children). */
function workerPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
}

describe("wayfind serve --workers, refused", () => {
  it("refuses --workers 0, a negative or a non-number, saying what to give", async () => {
    for (const given of ["0", "-1", "two", "1.5", "65"]) {
      const { code, stderr } = await finished(["serve", `--workers=${given}`, "--port", "0"]);
      expect(code).toBe(2);
      expect(stderr).toContain(`--workers ${given}: give a whole number of worker processes from 1 to 64`);
    }
  });

  it("refuses more than one worker on a SQLite data dir, saying to configure storage.postgres", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-workers-"));
    try {
      const { code, stderr } = await finished([
        "serve",
        "--workers",
        "2",
        "--port",
        "0",
        "--data-dir",
        dataDir,
      ]);
      expect(code).toBe(2);
      expect(stderr).toContain("--workers 2 needs storage.postgres");
      expect(stderr).toContain("Set storage.postgres.url in the config (or WAYFIND_DATABASE_URL)");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

const unavailable = postgresUnavailable();
const agent = apiKey("agent", { tenant: "acme", roles: ["agent"] });
describe.skipIf(unavailable)(
  `wayfind serve --workers 2 on PostgreSQL${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    let postgres: TestPostgres;
    let dir: string;
    let serve: CliRun;
    let port = 0;
    const log: { msg: string; worker?: number; workers?: number; port?: number }[] = [];
    /** Every worker pid seen, so the teardown stops any left. */
    const seen = new Set<number>();

    /** Resolves with the first log line (of any process) matching, read as it comes. */
    const logLine = async (matches: (line: (typeof log)[number]) => boolean, ms = 60_000) => {
      for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(50)) {
        const line = log.find(matches);
        if (line) return line;
        if (serve.child.exitCode !== null) break;
      }
      throw new Error(`no such log line; stderr:\n${serve.stderr.join("")}`);
    };

    beforeAll(async () => {
      postgres = await startPostgres();
      dir = mkdtempSync(join(tmpdir(), "wayfind-workers-"));
      const config = join(dir, "wayfind.yaml");
      writeFileSync(
        config,
        stringify({ auth: { api_keys: [agent.entry] }, tool_search: { semantic: { enabled: false } } }),
      );
      serve = runCli(
        ["serve", "--workers", "2", "--config", config, "--port", "0", "--data-dir", join(dir, "data")],
        { WAYFIND_DATABASE_URL: postgres.url },
      );
      void (async () => {
        for await (const line of createInterface({ input: serve.child.stdout })) log.push(JSON.parse(line));
      })();
      port = (await logLine((line) => line.msg === "listening" && line.workers === 2)).port ?? 0;
      for (const pid of workerPids(serve.child.pid ?? 0)) seen.add(pid);
    }, 90_000);

    afterAll(async () => {
      if (serve && serve.child.exitCode === null && serve.child.signalCode === null) {
        serve.child.kill("SIGKILL");
        await serve.exited;
      }
      for (const pid of seen) if (isAlive(pid)) process.kill(pid, "SIGKILL");
      await postgres?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("serves one port from two worker processes, each a replica with its own copy under the data dir", async () => {
      expect(port).toBeGreaterThan(0);
      expect(seen.size).toBe(2);
      expect(
        log
          .filter((line) => line.msg === "listening" && line.worker !== undefined)
          .map((line) => line.worker)
          .sort(),
      ).toEqual([1, 2]);
      for (let call = 0; call < 6; call++) expect((await search(port)).status).toBe(200);
      for (const worker of ["1", "2"])
        expect(existsSync(join(dir, "data", "workers", worker, "wayfind.db"))).toBe(true);
      const ready = await onNewConnection(port, "/readyz");
      expect(ready.status).toBe(200);
    });

    it("shares what one worker is told with every other on its next call", async () => {
      const registered = await onNewConnection(
        port,
        "/wayfind.v1.ToolDiscoveryService/RegisterTools",
        {
          caller: { tenantId: "acme" },
          source: "shared-test",
          tools: [{ name: "forecast_lookup", description: "Looks up the weather forecast for a city" }],
        },
        { "wayfind-role": "admin" },
      );
      expect(registered.status).toBe(200);
      // Each on a connection of its own: the workers in turn answer.
      for (let call = 0; call < 4; call++)
        expect((await search(port, "forecast lookup")).text).toContain("forecast_lookup");
    });

    it("keeps an MCP session whichever worker a request of it reaches (the worker that opened it answers)", async () => {
      const session = await openMcpSession(`http://127.0.0.1:${port}`, agent.secret);
      expect(session).toMatch(/^w[12]\./);
      // Each ping on a connection of its own: half reach the other worker, which passes them on.
      for (let ping = 0; ping < 6; ping++) {
        const answer = await onNewConnection(
          port,
          "/mcp",
          { jsonrpc: "2.0", id: 10 + ping, method: "ping" },
          mcpHeaders(agent.secret, session),
        );
        expect(answer.status).toBe(200);
        expect(answer.text).toContain(`"id":${10 + ping}`);
      }
      // The session's event stream, on a connection of its own too, stays open through the other worker.
      for (let stream = 0; stream < 2; stream++) {
        const opened = await new Promise<import("node:http").IncomingMessage>((resolve, reject) =>
          request(
            {
              host: "127.0.0.1",
              port,
              path: "/mcp",
              agent: false,
              headers: mcpHeaders(agent.secret, session),
            },
            resolve,
          )
            .on("error", reject)
            .end(),
        );
        expect(opened.statusCode).toBe(200);
        expect(opened.headers["content-type"]).toBe("text/event-stream");
        opened.destroy();
        await sleep(100);
      }
      const unknown = await onNewConnection(
        port,
        "/mcp",
        { jsonrpc: "2.0", id: 1, method: "ping" },
        mcpHeaders(agent.secret, "w9.no-such-session"),
      );
      expect(unknown.status).toBe(404);
    });

    it("answers 1,000 requests of a 2026-07-28 client, each on a connection of its own, with no session to find", async () => {
      const answers: { status: number; text: string }[] = [];
      const next = { id: 0 };
      // Eight at a time, alternating a listing and a search: half reach each worker.
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next.id < 1_000) {
            const id = next.id++;
            const { headers, body } =
              id % 2 === 0
                ? modernRequest(agent.secret, id, "tools/list")
                : modernRequest(agent.secret, id, "tools/call", {
                    name: "tool_search",
                    arguments: { query: "forecast lookup" },
                  });
            answers.push(await onNewConnection(port, "/mcp", JSON.parse(body), headers));
          }
        }),
      );
      expect(answers).toHaveLength(1_000);
      expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
      expect(answers.filter((answer) => answer.text.includes("session"))).toEqual([]);
      expect(answers.filter((answer) => answer.text.includes("forecast_lookup")).length).toBe(500);
    }, 120_000);

    it("answers /metrics with every worker's calls summed, whichever worker is asked", async () => {
      const searches = async () => {
        const scrape = await onNewConnection(port, "/metrics");
        expect(scrape.status).toBe(200);
        const line =
          /^wayfind_calls_total\{method="\/wayfind.v1.ToolDiscoveryService\/SearchTools",code="ok",protocol="connect"\} (\d+)$/m;
        return Number(line.exec(scrape.text)?.[1] ?? 0);
      };
      const before = await searches();
      for (let call = 0; call < 10; call++) expect((await search(port)).status).toBe(200);
      // Asked on two connections (so of both workers): the same sum, all ten calls in it.
      expect([(await searches()) - before, (await searches()) - before]).toEqual([10, 10]);
    });

    it("keeps serving when a worker is killed, and restarts it", async () => {
      const [victim] = workerPids(serve.child.pid ?? 0);
      process.kill(victim as number, "SIGKILL");
      await sleep(200);
      const answers = await Promise.all(Array.from({ length: 8 }, () => search(port)));
      expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
      await logLine((line) => line.msg === "worker restarted");
      const now = workerPids(serve.child.pid ?? 0);
      for (const pid of now) seen.add(pid);
      expect(now).toHaveLength(2);
      expect(now).not.toContain(victim);
      for (let call = 0; call < 4; call++) expect((await search(port)).status).toBe(200);
    });

    it("refuses more workers than PostgreSQL takes connections for, saying what to change", async () => {
      const config = join(dir, "big-pools.yaml");
      writeFileSync(config, stringify({ storage: { postgres: { url: postgres.url, pool_size: 100 } } }));
      const { code, stderr } = await finished([
        "serve",
        "--workers",
        "2",
        "--config",
        config,
        "--port",
        "0",
        "--data-dir",
        join(dir, "big-pools"),
      ]);
      expect(code).toBe(2);
      expect(stderr).toContain("--workers 2 would hold up to 204 connections to PostgreSQL (102 each");
      expect(stderr).toContain(
        "Give fewer workers, a smaller storage.postgres.pool_size, or raise max_connections",
      );
    });

    it("drains every worker on SIGTERM and exits 0", async () => {
      const workers = workerPids(serve.child.pid ?? 0);
      serve.child.kill("SIGTERM");
      expect(await serve.exited).toBe(0);
      for (const pid of workers) expect(isAlive(pid)).toBe(false);
      expect(log.filter((line) => line.msg === "stopped" && line.worker !== undefined)).toHaveLength(2);
    });
  },
);
