import { readFileSync } from "node:fs";
import { createServer, type Server as HttpServer } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const require = createRequire(import.meta.url);

/** Absolute path of an installed npm package's (single) bin script. */
function binPath(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin: string | Record<string, string> };
  const rel = typeof bin === "string" ? bin : Object.values(bin)[0];
  if (!rel) throw new Error(`${pkg} has no bin`);
  return join(dirname(manifest), rel);
}

export const EVERYTHING = () => ({
  command: "node",
  args: [binPath("@modelcontextprotocol/server-everything"), "stdio"],
});
export const MEMORY = () => ({ command: "node", args: [binPath("@modelcontextprotocol/server-memory")] });
export const FILESYSTEM = (dir: string) => ({
  command: "node",
  args: [binPath("@modelcontextprotocol/server-filesystem"), dir],
});

export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly readOnly?: boolean;
  /** What a call answers; default: its text back. */
  readonly run?: (text: string, call: ToolCall) => Promise<CallToolResult>;
}

/** What a tool of startHttpMcpServer is given besides its text. */
interface ToolCall {
  readonly signal: AbortSignal;
  readonly authorization: string;
  /** The call's own: to ask the client (sendRequest) and tell it (sendNotification) during the call. */
  readonly extra: RequestHandlerExtra<ServerRequest, ServerNotification>;
  /** The session's server: what its client declared, and asking it after the call has ended. */
  readonly session: Server;
}

export interface HttpMcpServer {
  readonly url: string;
  /** Registers a tool on every live session (the SDK sends tools/list_changed). */
  addTool(tool: ToolSpec): void;
  /** Answers 503 to everything while down, as a server that went away. */
  setDown(down: boolean): void;
  /** How many `notifications/cancelled` the server has received. */
  cancellations(): number;
  /** How many `notifications/roots/list_changed` the server has received. */
  rootsChanges(): number;
  close(): Promise<void>;
}

/** Registers `tool` on `server`: text in, `tool.run`'s result (or the text) out. */
function register(server: McpServer, tool: ToolSpec): void {
  server.registerTool(
    tool.name,
    {
      description: tool.description,
      inputSchema: { text: z.string().describe("Input text") },
      annotations: { readOnlyHint: tool.readOnly ?? false, idempotentHint: true },
    },
    async ({ text }, extra) =>
      tool.run
        ? tool.run(text, {
            signal: extra.signal,
            authorization: String(extra.requestInfo?.headers.authorization ?? ""),
            extra,
            session: server.server,
          })
        : { content: [{ type: "text", text }] },
  );
}

/** A streamable-HTTP MCP server built with the SDK's McpServer, on 127.0.0.1:0, stateful sessions. */
export async function startHttpMcpServer(initial: readonly ToolSpec[]): Promise<HttpMcpServer> {
  const tools = [...initial];
  const sessions = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();
  let down = false;
  let cancellations = 0;
  let rootsChanges = 0;
  const http = createServer(async (req, res) => {
    if (down) {
      res.writeHead(503).end();
      return;
    }
    const id = req.headers["mcp-session-id"];
    const existing = typeof id === "string" ? sessions.get(id) : undefined;
    if (existing) {
      await existing.transport.handleRequest(req, res);
      return;
    }
    const server = new McpServer({ name: "test-http", version: "1.0.0" });
    for (const tool of tools) register(server, tool);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (sid) => {
        sessions.set(sid, { server, transport });
      },
    });
    await server.connect(transport);
    const handle = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if ("method" in message && message.method === "notifications/cancelled") cancellations++;
      if ("method" in message && message.method === "notifications/roots/list_changed") rootsChanges++;
      handle?.(message, extra);
    };
    await transport.handleRequest(req, res);
  });
  return listen<Omit<HttpMcpServer, "url">>(http, {
    cancellations: () => cancellations,
    rootsChanges: () => rootsChanges,
    addTool(tool) {
      tools.push(tool);
      for (const { server } of sessions.values()) register(server, tool);
    },
    setDown(value) {
      down = value;
      if (value) {
        for (const { transport } of sessions.values()) void transport.close();
        sessions.clear();
      }
    },
    async close() {
      for (const { transport } of sessions.values()) await transport.close();
      sessions.clear();
    },
  });
}

/**
 * `tools` on the older HTTP+SSE transport (MCP 2024-11-05), as servers that predate Streamable HTTP
 * serve them: a GET of /sse opens a session's event stream, which names where to POST its messages.
 */
export async function startSseMcpServer(
  tools: readonly ToolSpec[],
): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, SSEServerTransport>();
  const http = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      sessions.set(transport.sessionId, transport);
      transport.onclose = () => sessions.delete(transport.sessionId);
      const server = new McpServer({ name: "test-sse", version: "1.0.0" });
      for (const tool of tools) register(server, tool);
      await server.connect(transport);
      return;
    }
    const transport = sessions.get(url.searchParams.get("sessionId") ?? "");
    if (req.method === "POST" && url.pathname === "/messages" && transport !== undefined)
      return void (await transport.handlePostMessage(req, res));
    res.writeHead(404).end();
  });
  const listening = await listen(http, {
    async close() {
      for (const transport of sessions.values()) await transport.close();
    },
  });
  return { ...listening, url: listening.url.replace(/\/mcp$/, "/sse") };
}

/**
 * A streamable-HTTP MCP server (low-level SDK `Server`, stateless) whose tools/list answer is
 * whatever `list` returns, so tests can send invalid schemas, duplicates, pages or never answer.
 */
export async function startRawHttpMcpServer(
  list: (cursor: string | undefined) => Promise<{ tools: unknown[]; nextCursor?: string }>,
): Promise<{ url: string; close(): Promise<void> }> {
  const { Server } = await import("@modelcontextprotocol/sdk/server/index.js");
  const { ListToolsRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
  const http = createServer(async (req, res) => {
    const server = new Server({ name: "raw", version: "1.0.0" }, { capabilities: { tools: {} } });
    // biome-ignore lint/suspicious/noExplicitAny: the point is to answer with anything at all.
    server.setRequestHandler(ListToolsRequestSchema, (request) => list(request.params?.cursor) as any);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    res.on("close", () => void server.close());
    await transport.handleRequest(req, res);
  });
  return listen<{ close(): Promise<void> }>(http, { async close() {} });
}

async function listen<T extends { close(): Promise<void> }>(
  http: HttpServer,
  api: T,
): Promise<T & { url: string }> {
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    ...api,
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await api.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
