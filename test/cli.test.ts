import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { CLI, listeningLine, listeningPort, runCli as run } from "./support/cli.ts";
import { startTestServer } from "./support/server.ts";

const hasScript = spawnSync("script", ["--version"]).status === 0;

/** Runs the CLI to its end: exit code, stdout and stderr. */
async function output(args: string[]) {
  const { child, stderr, exited } = run(args);
  const out: string[] = [];
  child.stdout.on("data", (chunk: Buffer) => out.push(chunk.toString()));
  return { code: await exited, stdout: out.join(""), stderr: stderr.join("") };
}

describe("wayfind serve", () => {
  it("logs a JSON 'listening' line with the bound port and the console's address, and drains on SIGTERM", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-cli-"));
    const serve = run(["serve", "--port", "0", "--data-dir", dataDir]);
    const { child, exited } = serve;
    const { port, console } = await listeningLine(serve);
    expect(port).toBeGreaterThan(0);
    expect(console).toBe(`http://127.0.0.1:${port}/console`);
    const health = await fetch(`http://127.0.0.1:${port}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(await health.json()).toEqual({ status: "SERVING" });
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });

  it("tunes its own process for a long-running server however it was launched, or says it could not", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-cli-"));
    // Launched as `node bin/wayfind.js serve`, with no flag and no variable set.
    const serve = run(["serve", "--port", "0", "--data-dir", dataDir]);
    const lines: { msg: string }[] = [];
    try {
      for await (const line of createInterface({ input: serve.child.stdout })) {
        lines.push(JSON.parse(line) as { msg: string });
        if (lines.at(-1)?.msg === "listening") break;
      }
      serve.child.stdout.resume();
      const pid = serve.child.pid as number;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      const warned = lines.some((l) => l.msg.startsWith("memory settings not applied"));
      if (typeof (process as { execve?: unknown }).execve === "function") {
        // The same process (pid), replaced by one with the allocator settings and V8 flags.
        expect(cmdline).toEqual(
          expect.arrayContaining(["--max-semi-space-size=2", "--heap-growing-percent=20"]),
        );
        expect(environ).toEqual(
          expect.arrayContaining(["MALLOC_ARENA_MAX=2", "MALLOC_MMAP_THRESHOLD_=131072"]),
        );
        expect(warned).toBe(false);
      } else {
        expect(cmdline).not.toContain("--max-semi-space-size=2");
        expect(warned).toBe(true);
      }
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });

  it("serves the demo's workspace tools over MCP: listed, called by name and through tool_call, confined to the workspace", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-cli-"));
    const serve = run(["serve", "--port", "0", "--data-dir", dataDir]);
    const client = new Client({ name: "demo-probe", version: "1.0.0" });
    try {
      const port = await listeningPort(serve);
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      await client.connect(
        new StreamableHTTPClientTransport(url, { requestInit: { headers: { "wayfind-tenant": "acme" } } }),
      );
      // The demo's MCP server connects while the server starts; its tools are listed once synced.
      let names: string[] = [];
      for (let attempt = 0; attempt < 100 && !names.includes("workspace.read_file"); attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
        names = (await client.listTools()).tools.map((tool) => tool.name);
      }
      expect(names).toEqual(expect.arrayContaining(["workspace.read_file", "workspace.list_directory"]));
      const textOf = (result: unknown) =>
        ((result as { content: { text: string }[] }).content[0] as { text: string }).text;
      const todo = await client.callTool({
        name: "workspace.read_file",
        arguments: { path: "notes/todo.md" },
      });
      expect(textOf(todo)).toContain("Rotate the staging database password.");
      const found = await client.callTool({
        name: "tool_call",
        arguments: { name: "workspace.search_files", arguments: { text: "tag the release" } },
      });
      expect(textOf(found)).toContain("notes/release.md:4: 2. Tag the release and push the tag.");
      const outside = await client.callTool({
        name: "workspace.read_file",
        arguments: { path: "../wayfind.yaml" },
      });
      expect(outside.isError).toBe(true);
      expect(textOf(outside)).toContain("is outside the workspace");
    } finally {
      await client.close();
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });

  it("serves the demo with hybrid search and no configuration: a request that shares no word with its tool finds it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-cli-"));
    const serve = run(["serve", "--port", "0", "--data-dir", dataDir]);
    try {
      const port = await listeningPort(serve);
      const baseUrl = `http://127.0.0.1:${port}`;
      const started = performance.now();
      let readiness: { checks: { semantic: string; semantic_pending: number } } | undefined;
      while (readiness?.checks.semantic !== "ready" && performance.now() - started < 15_000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        readiness = (await (await fetch(`${baseUrl}/readyz`)).json()) as typeof readiness;
      }
      expect(readiness?.checks).toMatchObject({ semantic: "ready", semantic_pending: 0 });
      const search = async () =>
        (await (
          await fetch(`${baseUrl}/wayfind.v1.ToolDiscoveryService/SearchTools`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              caller: { tenantId: "acme" },
              query: "should I take an umbrella tomorrow?",
            }),
          })
        ).json()) as { tools: { name: string; semanticScore?: number }[]; semanticStatus: string };
      let found = await search();
      // On a busy machine the first answer may come by words (tool_search.semantic.max_wait_ms): the
      // request's meaning is embedded all the same, and the same request is then ranked by it.
      for (let retry = 0; found.semanticStatus !== "SEMANTIC_STATUS_READY" && retry < 100; retry++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        found = await search();
      }
      expect(found.semanticStatus).toBe("SEMANTIC_STATUS_READY");
      expect(found.tools[0]?.name).toBe("get_weather");
      expect(found.tools[0]?.semanticScore).toBeGreaterThan(0);
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });

  it.skipIf(!hasScript)("logs readable lines, not JSON, on a terminal", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-cli-"));
    // util-linux `script` runs the server on a pseudo-terminal.
    const command = `${process.execPath} ${CLI} serve --port 0 --data-dir ${dataDir}`;
    // Its own process group, so the server under `script` is stopped with it.
    const child = spawn("script", ["-qfec", command, "/dev/null"], {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line in:\n${out}`)), 30_000);
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("listening")) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    process.kill(-(child.pid ?? 0), "SIGTERM");
    const line = out.split("\n").find((l) => l.includes("listening")) ?? "";
    expect(line).toContain("INFO");
    expect(line.trim().startsWith("{")).toBe(false);
  });

  it("refuses to start with a mistyped config key, naming file, key and fix", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-cli-"));
    const config = join(dir, "wayfind.yaml");
    writeFileSync(config, "catalgos: []\n");
    const { stderr, exited } = run(["serve", "--config", config, "--port", "0"]);
    expect(await exited).toBe(1);
    const message = stderr.join("");
    expect(message).toContain("wayfind.yaml");
    expect(message).toContain("did you mean `catalogs`");
  });

  it("refuses a missing catalog file by config file, line and key, creating nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-cli-"));
    const config = join(dir, "wayfind.yaml");
    const dataDir = join(dir, "state");
    writeFileSync(config, `server: {data_dir: ${dataDir}}\ncatalogs:\n  - path: nope.jsonl\n`);
    const { stderr, exited } = run(["serve", "--config", config, "--port", "0"]);
    expect(await exited).toBe(1);
    expect(stderr.join("")).toMatch(
      /wayfind\.yaml:3:\d+: catalogs\[0\]\.path: no catalog file at .*nope\.jsonl/,
    );
    expect(existsSync(dataDir)).toBe(false);
  });

  it("names the config's file, line and key for an example it gives a catalog's tool that does not fit", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-cli-"));
    const config = join(dir, "wayfind.yaml");
    const catalog = join(import.meta.dirname, "..", "demo", "catalogs", "github.jsonl");
    writeFileSync(
      config,
      `server: {data_dir: ${join(dir, "state")}}\ncatalogs:\n  - path: ${catalog}\n    namespace: github\n` +
        `    examples:\n      github.create_issue:\n        - args: {title: Crash}\n`,
    );
    const { stderr, exited } = run(["serve", "--config", config, "--port", "0"]);
    expect(await exited).toBe(1);
    expect(stderr.join("")).toMatch(
      /wayfind\.yaml:6:7: catalogs\[0\]\.examples: tool "github\.create_issue": example 0 does not match the args schema at \/owner/,
    );
  });

  it("rejects an unknown command with the command meant and the usage", async () => {
    const { stderr, exited } = run(["serv"]);
    expect(await exited).toBe(2);
    expect(stderr.join("")).toContain('wayfind: unknown "serv"; did you mean "serve"?');
    expect(stderr.join("")).toContain("Usage:");
  });

  it.each([
    [["keys", "crate"], 'wayfind keys: unknown "crate"; did you mean "create"?'],
    [["learning", "shw"], 'wayfind learning: unknown "shw"; did you mean "show"?'],
    [["demo", "rest"], 'wayfind demo: unknown "rest"; did you mean "reset"?'],
    [["catalog", "stat"], 'wayfind catalog: unknown "stat"; did you mean "stats"?'],
  ])("answers the misspelled action of %j with the one meant", async (args, message) => {
    const { code, stderr } = await output(args);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });
});

describe("wayfind's own help", () => {
  it("prints the version from package.json", async () => {
    const manifest = JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8"));
    expect(await output(["--version"])).toMatchObject({ code: 0, stdout: `wayfind ${manifest.version}\n` });
  });

  it.each([
    [["serve", "--help"], "Usage: wayfind serve"],
    [["sources", "-h"], "Usage: wayfind sources"],
    [["catalog", "stats", "--help"], "Usage: wayfind catalog stats"],
  ])("answers %j with the command's usage", async (args, usage) => {
    const { code, stdout } = await output(args);
    expect(code).toBe(0);
    expect(stdout).toContain(usage);
  });

  it("answers a mistyped flag with the flag meant and the command's usage, before loading anything", async () => {
    const { code, stderr } = await output(["serve", "--prot", "0"]);
    expect(code).toBe(2);
    expect(stderr).toContain("unknown option --prot; did you mean --port?");
    expect(stderr).toContain("Usage: wayfind serve");
  });
});

describe("wayfind demo reset", () => {
  it("deletes a data folder no server uses, so the next start is fresh", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-demo-"));
    const server = await startTestServer({}, { dataDir });
    await server.stop({ keepData: true });
    expect(existsSync(join(dataDir, "wayfind.db"))).toBe(true);
    const { code, stdout } = await output(["demo", "reset", "--data-dir", dataDir]);
    expect(code).toBe(0);
    expect(stdout).toContain("reset: deleted");
    expect(existsSync(dataDir)).toBe(false);
  });

  it("refuses while a server uses the folder, and a folder that is not a data folder", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wayfind-demo-"));
    const server = await startTestServer({}, { dataDir });
    try {
      const busy = await output(["demo", "reset", "--data-dir", dataDir]);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain(`in use by wayfind process ${process.pid}`);
      expect(existsSync(join(dataDir, "wayfind.db"))).toBe(true);
    } finally {
      await server.stop({ keepData: true });
    }
    const other = mkdtempSync(join(tmpdir(), "wayfind-demo-"));
    writeFileSync(join(other, "notes.txt"), "mine");
    const refused = await output(["demo", "reset", "--data-dir", other]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("not a wayfind data folder");
    expect(existsSync(join(other, "notes.txt"))).toBe(true);
  });
});

describe("wayfind catalog stats", () => {
  it("prints the schema budget of the configured catalogs and exits 1 when a tool is over the ceiling", async () => {
    const { child, exited } = run(["catalog", "stats", "--ceiling", "150", "--top", "3"]);
    const out: string[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk.toString()));
    expect(await exited).toBe(1);
    const text = out.join("");
    expect(text).toContain("github.create_pull_request");
    expect(text).toMatch(/over 150-token ceiling: [1-9]/);
  });
});
