/**
 * wayfind's MCP endpoint against the MCP servers behind it (docs/mcp.md), on the 309-tool catalog of
 * data/eval/mcp_catalog.jsonl served by 17 Streamable-HTTP MCP servers on loopback (one per `server`
 * of the catalog, in this process). Prints:
 *  - the tokens a client's model sees for tools: every server's tools/list together, against
 *    wayfind's /mcp tools/list;
 *  - the latency a proxied tools/call adds: the SDK client calling a server directly, against the
 *    same call as `tool_call` through `wayfind serve` (a child process), sequential, p50 / p99;
 *  - 200 client sessions at once, each calling through wayfind: errors, throughput, server memory.
 * Run: `node --import tsx bench/mcp-endpoint.ts [--calls N] [--sessions N]`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { stringify } from "yaml";
import { fetchWithOwnSignal } from "../src/sources/mcp-fetch.ts";
import { estimateTokens } from "../src/text/tokens.ts";
import { printAligned, ROOT, spawnServer, wayfindServeArgs } from "./lib/grpc-bench-support.ts";
import { percentile } from "./lib/stats.ts";

const { values } = parseArgs({
  options: { calls: { type: "string", default: "2000" }, sessions: { type: "string", default: "200" } },
});
const CALLS = Number(values.calls);
const SESSIONS = Number(values.sessions);
/** The tool every latency sample calls: small arguments, a small answer. */
const TOOL = { server: "memory", name: "read_graph" };

interface CatalogTool {
  readonly server: string;
  readonly tool: string;
  readonly description: string;
  readonly parameters: Tool["inputSchema"];
}
const catalog = readFileSync(join(ROOT, "data/eval/mcp_catalog.jsonl"), "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line) as CatalogTool);
const byServer = new Map<string, CatalogTool[]>();
for (const tool of catalog) byServer.set(tool.server, [...(byServer.get(tool.server) ?? []), tool]);

/** A stateful Streamable-HTTP MCP server listing `tools`; every call answers a short text. */
async function upstream(tools: readonly CatalogTool[]): Promise<{ url: string; close(): Promise<void> }> {
  const listed: Tool[] = tools.map((t) => ({
    name: t.tool,
    description: t.description,
    inputSchema: t.parameters,
  }));
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http: HttpServer = createServer(async (req, res) => {
    const id = req.headers["mcp-session-id"];
    const known = typeof id === "string" ? sessions.get(id) : undefined;
    if (known) return known.handleRequest(req, res);
    const server = new Server({ name: "upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
    server.setRequestHandler(CallToolRequestSchema, (request) => ({
      content: [{ type: "text", text: `ok: ${request.params.name}` }],
    }));
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (sid) => void sessions.set(sid, transport),
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    async close() {
      for (const transport of sessions.values()) await transport.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: "bench", version: "1.0.0" });
  // The SDK's own fetch leaks an abort listener per request (src/sources/mcp-fetch.ts).
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithOwnSignal }));
  return client;
}

/** Every tool of every page of a client's tools/list. */
async function listAll(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

/** Milliseconds of each of `n` sequential runs of `call`, after `n / 10` warm-up runs. */
async function timed(n: number, call: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < Math.ceil(n / 10); i++) await call();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await call();
    samples.push(performance.now() - started);
  }
  return samples.sort((a, b) => a - b);
}

const servers = new Map<string, Awaited<ReturnType<typeof upstream>>>();
for (const [name, tools] of byServer) servers.set(name, await upstream(tools));
const dir = mkdtempSync(join(tmpdir(), "wayfind-bench-mcp-"));
const config = join(dir, "wayfind.yaml");
writeFileSync(
  config,
  stringify({
    mcp_servers: [...servers].map(([name, server]) => ({
      name,
      transport: "http",
      url: server.url,
      max_concurrent_calls: 64,
    })),
  }),
);
const wayfind = await spawnServer(wayfindServeArgs(config, join(dir, "data")), {
  logFile: join(dir, "serve.log"),
});
const endpoint = `http://127.0.0.1:${wayfind.port}/mcp`;
try {
  // Tokens a model sees for tools.
  const direct = await Promise.all(
    [...servers.values()].map(async (server) => listAll(await connect(server.url))),
  );
  const aggregated = direct.flat();
  const viaWayfind = await listAll(await connect(endpoint));
  const tokens = (tools: Tool[]) => estimateTokens(JSON.stringify(tools));
  console.log("\ntools a client's model sees (tools/list, JSON of name, description, inputSchema)");
  printAligned(
    ["", "tools", "tokens"],
    [
      ["every server's tools/list", String(aggregated.length), String(tokens(aggregated))],
      ["wayfind /mcp", String(viaWayfind.length), String(tokens(viaWayfind))],
    ],
    new Set([1, 2]),
  );

  // Latency a proxied call adds.
  const upstreamClient = await connect(servers.get(TOOL.server)?.url ?? "");
  const wayfindClient = await connect(endpoint);
  const directMs = await timed(CALLS, () => upstreamClient.callTool({ name: TOOL.name, arguments: {} }));
  const proxiedMs = await timed(CALLS, () =>
    wayfindClient.callTool({
      name: "tool_call",
      arguments: { name: `${TOOL.server}.${TOOL.name}`, arguments: {} },
    }),
  );
  const ms = (value: number) => value.toFixed(2);
  console.log(`\ntools/call, ${CALLS} sequential calls (ms)`);
  printAligned(
    ["", "p50", "p99"],
    [
      ["direct to the server", ms(percentile(directMs, 50)), ms(percentile(directMs, 99))],
      ["through wayfind (tool_call)", ms(percentile(proxiedMs, 50)), ms(percentile(proxiedMs, 99))],
      [
        "added by wayfind",
        ms(percentile(proxiedMs, 50) - percentile(directMs, 50)),
        ms(percentile(proxiedMs, 99) - percentile(directMs, 99)),
      ],
    ],
    new Set([1, 2]),
  );

  // Many sessions at once.
  const clients = await Promise.all(Array.from({ length: SESSIONS }, () => connect(endpoint)));
  let errors = 0;
  const perSession = 5;
  const started = performance.now();
  await Promise.all(
    clients.map(async (client, i) => {
      for (let k = 0; k < perSession; k++) {
        const tool = catalog[(i * perSession + k) % catalog.length] as CatalogTool;
        const result = await client
          .callTool({ name: "tool_call", arguments: { name: `${tool.server}.${tool.tool}`, arguments: {} } })
          .catch(() => ({ isError: true }));
        // Arguments left empty: a tool whose schema requires some answers isError, which is a result.
        if (result.isError && !JSON.stringify(result).includes("do not match its schema")) errors++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(`\n${SESSIONS} sessions at once, ${perSession} tool_calls each`);
  printAligned(
    ["calls", "errors", "calls/s", "server RSS peak (MiB)"],
    [
      [
        String(SESSIONS * perSession),
        String(errors),
        ((SESSIONS * perSession) / seconds).toFixed(0),
        wayfind.rss().peakMiB.toFixed(0),
      ],
    ],
    new Set([0, 1, 2, 3]),
  );
  await Promise.all([...clients, upstreamClient, wayfindClient].map((client) => client.close()));
} finally {
  await wayfind.stop();
  for (const server of servers.values()) await server.close();
  rmSync(dir, { recursive: true, force: true });
}
