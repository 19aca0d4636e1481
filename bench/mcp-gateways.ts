/**
 * wayfind's /mcp beside mcp-proxy 0.13.0 (sparfenyuk/mcp-proxy, Python; installed from PyPI into
 * .tools/mcp-proxy on first use), both fronting the same small stdio MCP server
 * (bench/lib/mcp-stdio-upstream.ts), and the same SDK client on every path. Prints:
 *  - tools/call latency, calls interleaved one by one: the server over stdio directly, through
 *    wayfind (`tool_call`, `wayfind serve` as a child) and through mcp-proxy (its Streamable HTTP),
 *    p50 / p99 and what each gateway adds over direct, and each gateway's CPU per call and RSS;
 *  - the same call through wayfind by a client of MCP 2026-07-28 (the 2.x SDK client, no session);
 *  - a tool call during which the server asks the client one question (sampling/createMessage,
 *    elicitation/create, roots/list; the client answers at once), direct against through wayfind
 *    (a 2025 session asked on its stream; a 2026 client over two rounds, input_required), interleaved
 *    the same way — and what mcp-proxy answers to the same call.
 * Run: `node --import tsx bench/mcp-gateways.ts [--calls N] [--asks N] [--cpu-prof] [--trace-gc]`
 * (--cpu-prof: wayfind's busiest functions over the tools/call runs; --trace-gc: its collections
 * over them. Either slows the server: read its latencies from a run without them).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolResult,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { stringify } from "yaml";
import { fetchWithOwnSignal } from "../src/sources/mcp-fetch.ts";
import { mainThreadProfile, monotonicUs, summarizeProfile } from "./lib/cpu-profile.ts";
import {
  printAligned,
  ROOT,
  readCpuMs,
  readRss,
  spawnServer,
  wayfindServeArgs,
} from "./lib/grpc-bench-support.ts";
import { pythonTool } from "./lib/python-tool.ts";
import { percentile } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "1000" },
    asks: { type: "string", default: "300" },
    "cpu-prof": { type: "boolean", default: false },
    "trace-gc": { type: "boolean", default: false },
  },
  strict: true,
});
const CALLS = Number(values.calls);
const ASKS = Number(values.asks);
const MCP_PROXY = "mcp-proxy==0.13.0";
/** The upstream as every path starts it; wayfind names it `up`, so its tools are `up.<tool>`. */
const UPSTREAM = { command: process.execPath, args: ["--import", "tsx", "bench/lib/mcp-stdio-upstream.ts"] };

/** The client's capabilities when it may be asked something, and its answers, given at once. */
const ASKABLE = { sampling: {}, elicitation: {}, roots: { listChanged: true } };
function answerAtOnce(client: Client): void {
  client.setRequestHandler(CreateMessageRequestSchema, () => ({
    role: "assistant",
    content: { type: "text", text: "pong" },
    model: "bench",
  }));
  client.setRequestHandler(ElicitRequestSchema, () => ({ action: "accept", content: { answer: "ok" } }));
  client.setRequestHandler(ListRootsRequestSchema, () => ({
    roots: [{ uri: "file:///bench", name: "bench" }],
  }));
}

/**
 * The 2.x SDK client pinned to MCP 2026-07-28 (no session: every request on its own), answering the
 * server's questions over rounds (input_required) when `askable`.
 */
async function modernClient(url: string, askable: boolean): Promise<ModernClient> {
  const client = new ModernClient(
    { name: "bench", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: askable ? ASKABLE : {} },
  );
  if (askable) {
    client.setRequestHandler("sampling/createMessage", () => ({
      role: "assistant",
      content: { type: "text", text: "pong" },
      model: "bench",
    }));
    client.setRequestHandler("elicitation/create", () => ({ action: "accept", content: { answer: "ok" } }));
    client.setRequestHandler("roots/list", () => ({ roots: [{ uri: "file:///bench", name: "bench" }] }));
  }
  await client.connect(new ModernTransport(new URL(url)));
  return client;
}
const viaModern = (client: ModernClient, tool: string, expected: string) => () =>
  expectText(
    client.callTool({ name: "tool_call", arguments: { name: `up.${tool}`, arguments: {} } }),
    expected,
  );

async function connect(transport: Transport, askable: boolean): Promise<Client> {
  const client = new Client({ name: "bench", version: "1.0.0" }, { capabilities: askable ? ASKABLE : {} });
  if (askable) answerAtOnce(client);
  await client.connect(transport);
  return client;
}
const overStdio = (askable: boolean) =>
  connect(new StdioClientTransport({ ...UPSTREAM, cwd: ROOT, stderr: "ignore" }), askable);
// The SDK's own fetch leaks an abort listener per request (src/sources/mcp-fetch.ts).
const overHttp = (url: string, askable: boolean) =>
  connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithOwnSignal }), askable);

/** Calls `tool` and throws unless it answered `expected`, so a failing path never times as fast. */
async function expectText(call: Promise<unknown>, expected: string): Promise<void> {
  const result = (await call) as CallToolResult;
  const [first] = result.content;
  if (result.isError || first?.type !== "text" || first.text !== expected)
    throw new Error(`unexpected tool result: ${JSON.stringify(result).slice(0, 300)}`);
}
const direct = (client: Client, tool: string, expected: string) => () =>
  expectText(client.callTool({ name: tool, arguments: {} }), expected);
const viaWayfind = (client: Client, tool: string, expected: string) => () =>
  expectText(
    client.callTool({ name: "tool_call", arguments: { name: `up.${tool}`, arguments: {} } }),
    expected,
  );

/**
 * Milliseconds of `n` calls of each path, interleaved one by one (the first path rotating, so no path
 * always follows another) after `n / 10` unmeasured rounds; each path's samples ascending.
 */
async function interleaved(paths: readonly (() => Promise<void>)[], n: number): Promise<number[][]> {
  for (let i = 0; i < Math.ceil(n / 10); i++) for (const call of paths) await call();
  const samples = paths.map((): number[] => []);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < paths.length; k++) {
      const at = (i + k) % paths.length;
      const started = performance.now();
      await paths[at]?.();
      samples[at]?.push(performance.now() - started);
    }
  }
  return samples.map((s) => s.sort((a, b) => a - b));
}

/** A TCP port free on loopback now (mcp-proxy takes its port from the command line). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** `mcp-proxy --port P -- <upstream>` with its log to `logFile`, once its /status answers. */
async function startMcpProxy(logFile: string): Promise<{ child: ChildProcess; url: string }> {
  const venv = await pythonTool("mcp-proxy", MCP_PROXY);
  const port = await freePort();
  const log = openSync(logFile, "w");
  const child = spawn(
    join(venv, "bin/mcp-proxy"),
    ["--host", "127.0.0.1", "--port", String(port), "--cwd", ROOT, "--", UPSTREAM.command, ...UPSTREAM.args],
    { cwd: ROOT, stdio: ["ignore", log, log] },
  );
  closeSync(log);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    const ok = await fetch(`http://127.0.0.1:${port}/status`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return { child, url: `http://127.0.0.1:${port}/mcp` };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`mcp-proxy did not start:\n${readFileSync(logFile, "utf8").slice(-2000)}`);
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
  child.kill("SIGTERM");
  await exited;
  clearTimeout(kill);
}

/** Retries `call` until it succeeds (wayfind lists a server's tools once it has synced them). */
async function whenReady(call: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/**
 * The pauses (ms, ascending) of each kind of collection in `trace` (node --trace-gc lines), of the
 * isolate with the most of them: the main thread's (worker threads trace theirs as well).
 */
function gcPauses(trace: string): [string, number[]][] {
  const byIsolate = new Map<string, Map<string, number[]>>();
  for (const line of trace.split("\n")) {
    const gc =
      /^\[\d+:(0x[0-9a-f]+)\]\s+[\d.]+ ms: ([A-Za-z -]+?)(?: \(reduce\))? [\d.]+ \(.*?, ([\d.]+) \/ [\d.]+ ms/.exec(
        line,
      );
    if (!gc) continue;
    const [, isolate = "", kind = "", pause = "0"] = gc;
    const kinds = byIsolate.get(isolate) ?? new Map<string, number[]>();
    byIsolate.set(isolate, kinds.set(kind, [...(kinds.get(kind) ?? []), Number(pause)]));
  }
  const count = (kinds: Map<string, number[]>) => [...kinds.values()].reduce((n, p) => n + p.length, 0);
  const [main] = [...byIsolate.values()].sort((a, b) => count(b) - count(a));
  return [...(main ?? new Map<string, number[]>())].map(([kind, pauses]) => [
    kind,
    pauses.sort((a, b) => a - b),
  ]);
}

const ms = (value: number) => value.toFixed(2);
const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-gateways-"));
const config = join(dir, "wayfind.yaml");
writeFileSync(
  config,
  stringify({ mcp_servers: [{ name: "up", transport: "stdio", ...UPSTREAM, cwd: ROOT }] }),
);
const profileDir = join(dir, "profile");
const serveLog = join(dir, "serve.log");
const wayfind = await spawnServer(
  [
    ...(values["cpu-prof"] ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []),
    ...(values["trace-gc"] ? ["--trace-gc"] : []),
    ...wayfindServeArgs(config, join(dir, "data")),
  ],
  { logFile: serveLog },
);
const proxy = await startMcpProxy(join(dir, "mcp-proxy.log")).catch(async (error: unknown) => {
  await wayfind.stop();
  throw error;
});
const proxyPid = proxy.child.pid ?? 0;
const clients: { close(): Promise<void> }[] = [];
try {
  const endpoint = `http://127.0.0.1:${wayfind.port}/mcp`;
  const [directClient, wayfindClient, proxyClient] = await Promise.all([
    overStdio(false),
    overHttp(endpoint, false),
    overHttp(proxy.url, false),
  ]);
  if (!directClient || !wayfindClient || !proxyClient) throw new Error("a client did not connect");
  const modern = await modernClient(endpoint, false);
  clients.push(directClient, wayfindClient, proxyClient, modern);
  await whenReady(viaWayfind(wayfindClient, "echo", "ok"));

  // tools/call, interleaved.
  const paths = [
    direct(directClient, "echo", "ok"),
    viaWayfind(wayfindClient, "echo", "ok"),
    direct(proxyClient, "echo", "ok"),
    viaModern(modern, "echo", "ok"),
  ];
  const cpuBefore = [readCpuMs(wayfind.pid), readCpuMs(proxyPid)];
  const window = { startUs: monotonicUs(), endUs: 0 };
  const logFrom = statSync(serveLog).size;
  const [directMs = [], wayfindMs = [], proxyMs = [], modernMs = []] = await interleaved(paths, CALLS);
  window.endUs = monotonicUs();
  const gcTrace = readFileSync(serveLog).subarray(logFrom).toString("utf8");
  // wayfind serves two of the paths: its CPU is shared out over both.
  const cpuPerCall = (pid: number, before: number, paths = 1) =>
    ms((readCpuMs(pid) - before) / (paths * (CALLS + Math.ceil(CALLS / 10))));
  const row = (label: string, samples: number[], cpu: string, rss: number) => [
    label,
    ms(percentile(samples, 50)),
    ms(percentile(samples, 99)),
    label === "direct (stdio)" ? "" : ms(percentile(samples, 50) - percentile(directMs, 50)),
    label === "direct (stdio)" ? "" : ms(percentile(samples, 99) - percentile(directMs, 99)),
    cpu,
    Number.isNaN(rss) ? "" : rss.toFixed(0),
  ];
  console.log(`\ntools/call of one stdio server, ${CALLS} calls a path, interleaved (ms)`);
  printAligned(
    ["path", "p50", "p99", "added p50", "added p99", "gateway CPU/call", "gateway RSS MiB"],
    [
      row("direct (stdio)", directMs, "", Number.NaN),
      row(
        "through wayfind /mcp (tool_call), 2025-11-25 session",
        wayfindMs,
        cpuPerCall(wayfind.pid, cpuBefore[0] ?? 0, 2),
        wayfind.rss().nowMiB,
      ),
      row("through wayfind /mcp (tool_call), 2026-07-28 request", modernMs, "(shared)", Number.NaN),
      row(
        "through mcp-proxy 0.13.0",
        proxyMs,
        cpuPerCall(proxyPid, cpuBefore[1] ?? 0),
        readRss(proxyPid).nowMiB,
      ),
    ],
    new Set([1, 2, 3, 4, 5, 6]),
  );

  // A question the server asks the client during a call.
  const [askingDirect, askingWayfind] = await Promise.all([overStdio(true), overHttp(endpoint, true)]);
  if (!askingDirect || !askingWayfind) throw new Error("a client did not connect");
  const askingModern = await modernClient(endpoint, true);
  clients.push(askingDirect, askingWayfind, askingModern);
  const asks = [
    { tool: "sample", expected: "pong", label: "sampling/createMessage" },
    { tool: "elicit", expected: "accept", label: "elicitation/create" },
    { tool: "roots", expected: "file:///bench", label: "roots/list" },
  ];
  // The session's own connection to the server starts on its first question.
  await whenReady(viaWayfind(askingWayfind, "sample", "pong"));
  const rows: string[][] = [];
  for (const ask of asks) {
    const [d = [], w = [], m = []] = await interleaved(
      [
        direct(askingDirect, ask.tool, ask.expected),
        viaWayfind(askingWayfind, ask.tool, ask.expected),
        viaModern(askingModern, ask.tool, ask.expected),
      ],
      ASKS,
    );
    const added = (samples: number[]) =>
      `${ms(percentile(samples, 50) - percentile(d, 50))} / ${ms(percentile(samples, 99) - percentile(d, 99))}`;
    rows.push([
      ask.label,
      `${ms(percentile(d, 50))} / ${ms(percentile(d, 99))}`,
      `${ms(percentile(w, 50))} / ${ms(percentile(w, 99))}`,
      added(w),
      `${ms(percentile(m, 50))} / ${ms(percentile(m, 99))}`,
      added(m),
    ]);
  }
  console.log(`\na tool call asking the client one question, ${ASKS} calls a path, interleaved (ms)`);
  printAligned(
    [
      "question",
      "direct p50 / p99",
      "through wayfind, 2025 session",
      "added",
      "through wayfind, 2026 rounds",
      "added",
    ],
    rows,
    new Set([1, 2, 3, 4, 5]),
  );
  const refusal = await proxyClient.callTool({ name: "sample", arguments: {} }).then(
    (result) => JSON.stringify(result.content).slice(0, 200),
    (error: unknown) => String(error).slice(0, 200),
  );
  console.log(
    `\nthe same sampling call through mcp-proxy 0.13.0 (no capability declared upstream): ${refusal}`,
  );

  if (values["trace-gc"]) {
    console.log(
      `\nwayfind's main thread's collections over the tools/call runs (${CALLS + Math.ceil(CALLS / 10)} calls)`,
    );
    printAligned(
      ["collection", "count", "pause p50 ms", "pause max", "over 2 ms"],
      gcPauses(gcTrace).map(([kind, pauses]) => [
        kind,
        String(pauses.length),
        ms(percentile(pauses, 50)),
        ms(pauses.at(-1) ?? 0),
        String(pauses.filter((p) => p > 2).length),
      ]),
      new Set([1, 2, 3, 4]),
    );
  }
  if (values["cpu-prof"]) {
    await wayfind.stop();
    const file = mainThreadProfile(profileDir);
    if (file) {
      const summary = summarizeProfile(file, ROOT, [window], () => true, 15);
      console.log(`\nwayfind's main thread over the tools/call runs (${summary.samples} samples)`);
      printAligned(
        ["function (file)", "self %", "total %"],
        summary.top.map((spot) => [spot.where, spot.selfPct.toFixed(1), spot.totalPct.toFixed(1)]),
        new Set([1, 2]),
      );
    }
  }
} finally {
  await Promise.all(clients.map((client) => client.close()));
  await wayfind.stop();
  await stopProcess(proxy.child);
  rmSync(dir, { recursive: true, force: true });
}
