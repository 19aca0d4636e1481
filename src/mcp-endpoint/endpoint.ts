/**
 * wayfind as an MCP server (docs/mcp.md): Streamable HTTP at `/mcp` on the service port, one SDK
 * `Server` per session. A session is opened by `initialize` with credentials the server accepts and
 * stays bound to them; every tool call is a wayfind RPC made with the request's own credentials, so
 * roles, tenant visibility and limits are the port's.
 */

import { createHash, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type ServerNotification,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import {
  CLIENT_CERTIFICATE_HEADER,
  hostnameOf,
  isLoopback,
  reboundHostRefusal,
  requestHost,
} from "../auth/index.ts";
import type { McpEndpointConfig, McpToolList } from "../config/index.ts";
import { errorReason } from "../errors.ts";
import { writeHead } from "../http-response.ts";
import type { JsonObject } from "../json.ts";
import { PROGRESS_SINK_HEADER, type ProgressSinks, type ToolProgress } from "../tools/progress.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { getPrompt, listPrompts, listResources, readResource } from "./session-skills.ts";
import { SessionTools } from "./session-tools.ts";

/** Streamable HTTP is served over HTTP/1.1 and HTTP/2 alike (the SDK's transport takes either). */
type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

const MCP_PATH = "/mcp";

/**
 * Request headers passed on to wayfind's RPCs and to authentication: credentials, the development
 * operator role and tenant (servers without credentials), trace context.
 */
const FORWARDED_HEADERS = ["authorization", "wayfind-role", "wayfind-tenant", "traceparent", "tracestate"];

export interface McpEndpointOptions {
  readonly clients: WayfindClients;
  /** Where the in-process CallTool finds the sink a call's progress goes to. */
  readonly progress: ProgressSinks;
  /** Throws (an UNAUTHENTICATED error saying why) unless the headers carry credentials the server accepts. */
  readonly authenticate: (headers: Headers) => Promise<void>;
  readonly config: McpEndpointConfig;
  /** The largest request body read. */
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  readonly version: string;
  /** The server listens on a loopback address: only loopback Host and Origin headers are served. */
  readonly loopback: boolean;
}

interface Session {
  readonly id: string;
  readonly transport: StreamableHTTPServerTransport;
  readonly server: Server;
  /** sha256 of the credentials that opened it: every later request must carry the same. */
  readonly credentials: string;
  /** The verified client certificate that opened it (mTLS), sent on with its calls; "" = none. */
  readonly certificate: string;
  lastUsedMs: number;
}

export class McpEndpoint {
  private readonly sessions = new Map<string, Session>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: McpEndpointOptions) {
    const idleMs = options.config.sessionIdleTimeoutSeconds * 1000;
    this.sweeper = setInterval(() => this.closeIdle(Date.now() - idleMs), Math.min(60_000, idleMs / 2));
    this.sweeper.unref();
  }

  /** Serves the request when it is for `/mcp`; false for any other path. */
  handles(request: Request, response: Response): boolean {
    const path = (request.url ?? "").split("?")[0];
    if (path !== MCP_PATH) return false;
    this.serve(request, response).catch((error: unknown) => {
      this.options.logger.error({ err: error }, "mcp request failed");
      if (!response.headersSent) reply(response, 500, ErrorCode.InternalError, "internal error");
      else response.end();
    });
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    await Promise.all([...this.sessions.values()].map((session) => this.end(session)));
  }

  private async serve(request: Request, response: Response): Promise<void> {
    if (this.closed) return reply(response, 503, ErrorCode.ConnectionClosed, "the server is stopping");
    const toolList = this.toolListAsked(request.url ?? "");
    if (toolList.error !== undefined) return reply(response, 400, ErrorCode.InvalidRequest, toolList.error);
    if (!["POST", "GET", "DELETE"].includes(request.method ?? ""))
      return reply(response, 405, ErrorCode.InvalidRequest, "use POST, GET or DELETE on /mcp");
    const refusal = this.crossSiteRefusal(request);
    if (refusal) return reply(response, 403, ErrorCode.InvalidRequest, refusal);
    const body = request.method === "POST" ? await this.readBody(request, response) : undefined;
    if (body === null) return;
    const headers = forwarded(request.headers);
    // Set by the transport from the TLS connection alone (a client cannot send its own): mTLS.
    const certificate = request.headers[CLIENT_CERTIFICATE_HEADER];
    if (typeof certificate === "string") headers.set(CLIENT_CERTIFICATE_HEADER, certificate);
    const id = request.headers["mcp-session-id"];
    if (typeof id === "string") {
      const session = this.sessions.get(id);
      // Another credential's session is not found, exactly as one that does not exist.
      if (session === undefined || session.credentials !== credentialsOf(headers))
        return reply(response, 404, -32001, "session not found: initialize a new one");
      session.lastUsedMs = Date.now();
      return handleOn(session, request, response, body);
    }
    if (!isInitializeRequest(body))
      return reply(
        response,
        400,
        ErrorCode.InvalidRequest,
        "no Mcp-Session-Id header: send initialize first",
      );
    try {
      await this.options.authenticate(headers);
    } catch (error) {
      return reply(response, 401, ErrorCode.InvalidRequest, errorReason(error));
    }
    const session = await this.open(headers, toolList.mode);
    await handleOn(session, request, response, body);
  }

  /**
   * Why a request that a web page may have sent is refused (DNS rebinding, cross-site requests), or
   * undefined. Native MCP clients send no Origin; a browser always does.
   */
  private crossSiteRefusal(request: Request): string | undefined {
    const host = requestHost(request.headers);
    const rebound = this.options.loopback ? reboundHostRefusal(host) : undefined;
    if (rebound !== undefined) return rebound;
    const origin = request.headers.origin;
    if (origin === undefined) return undefined;
    const originHost = hostnameOf(origin);
    const allowed = this.options.loopback ? isLoopback(originHost) : originHost === hostnameOf(host);
    return allowed ? undefined : `requests to /mcp from the web page at ${origin.slice(0, 100)} are refused`;
  }

  /** The tool list a request's URL asks for (`?tool_list=`), else the configured one. */
  private toolListAsked(url: string): { mode: McpToolList; error?: undefined } | { error: string } {
    const asked = new URLSearchParams(url.split("?")[1] ?? "").get("tool_list");
    if (asked === null) return { mode: this.options.config.toolList };
    if (asked === "fixed" || asked === "activated") return { mode: asked };
    return {
      error: `tool_list=${asked.slice(0, 40)} is not a tool list: use tool_list=fixed or tool_list=activated`,
    };
  }

  private async open(headers: Headers, toolList: McpToolList): Promise<Session> {
    if (this.sessions.size >= this.options.config.maxSessions) {
      const idlest = [...this.sessions.values()].sort((a, b) => a.lastUsedMs - b.lastUsedMs)[0];
      if (idlest) await this.end(idlest);
    }
    const id = randomUUID();
    const server = new Server(
      { name: "wayfind", version: this.options.version },
      {
        capabilities: {
          tools: { listChanged: toolList === "activated" },
          prompts: { listChanged: false },
          resources: { listChanged: false, subscribe: false },
        },
        instructions:
          "Find the tool you need with tool_search, load its schema with tool_get, then call it with tool_call. " +
          "skill_search and skill_get find step-by-step procedures.",
      },
    );
    const tools = new SessionTools(this.options.clients, toolList);
    const scope = (extra: { signal: AbortSignal; requestInfo?: { headers: IncomingMessage["headers"] } }) =>
      this.scopeOf(id, extra.requestInfo?.headers, extra.signal);
    server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
      tools.list(scope(extra), request.params?.cursor),
    );
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      this.callTool(tools, request.params, scope(extra), extra),
    );
    // Skills are prompts and resources too (session-skills.ts).
    server.setRequestHandler(ListPromptsRequestSchema, (request, extra) =>
      listPrompts(this.options.clients, scope(extra), request.params?.cursor),
    );
    server.setRequestHandler(GetPromptRequestSchema, (request, extra) =>
      getPrompt(this.options.clients, scope(extra), request.params.name),
    );
    server.setRequestHandler(ListResourcesRequestSchema, (request, extra) =>
      listResources(this.options.clients, scope(extra), request.params?.cursor),
    );
    server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
      readResource(this.options.clients, scope(extra), request.params.uri),
    );
    // Each answer is a stream (SSE), so a call's progress can go before its result.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => id });
    const session: Session = {
      id,
      transport,
      server,
      credentials: credentialsOf(headers),
      certificate: headers.get(CLIENT_CERTIFICATE_HEADER) ?? "",
      lastUsedMs: Date.now(),
    };
    transport.onclose = () => {
      if (this.sessions.get(id) === session) this.sessions.delete(id);
    };
    await server.connect(transport);
    this.sessions.set(id, session);
    return session;
  }

  /**
   * `tools/call`. What the tool's MCP server reports as progress is passed on when the client asked
   * for it (a `progressToken`), and a change of the session's activated list the call made is
   * announced (`notifications/tools/list_changed`): both in the call's own stream, ahead of its result.
   */
  private async callTool(
    tools: SessionTools,
    params: CallToolRequest["params"],
    scope: CallScope,
    extra: { sendNotification(notification: ServerNotification): Promise<void> },
  ): Promise<CallToolResult> {
    const progressToken = params._meta?.progressToken;
    const sink =
      progressToken === undefined
        ? undefined
        : this.options.progress.openSink((progress: ToolProgress) => {
            extra
              .sendNotification({ method: "notifications/progress", params: { ...progress, progressToken } })
              .catch(() => undefined);
          });
    if (sink) scope.headers.set(PROGRESS_SINK_HEADER, sink.name);
    try {
      const result = await tools.call(params.name, (params.arguments ?? {}) as JsonObject, scope);
      if (await tools.changed(params.name, scope).catch(() => false))
        await extra.sendNotification({ method: "notifications/tools/list_changed" }).catch(() => undefined);
      return result;
    } finally {
      sink?.close();
    }
  }

  private scopeOf(
    sessionId: string,
    raw: IncomingMessage["headers"] | undefined,
    signal: AbortSignal,
  ): CallScope {
    const header = (name: string) => {
      const value = raw?.[name];
      return typeof value === "string" ? value : "";
    };
    // Only the session's own certificate: the SDK rebuilds a request's headers from what the client
    // sent, where a certificate header could be forged.
    const headers = forwarded(raw ?? {});
    const certificate = this.sessions.get(sessionId)?.certificate ?? "";
    if (certificate !== "") headers.set(CLIENT_CERTIFICATE_HEADER, certificate);
    return {
      caller: {
        tenantId: header("wayfind-tenant"),
        projectId: header("wayfind-project"),
        userId: header("wayfind-user"),
        sessionId,
        runId: sessionId,
      },
      headers,
      signal,
    };
  }

  private async end(session: Session): Promise<void> {
    this.sessions.delete(session.id);
    await session.server.close().catch(() => undefined);
  }

  private closeIdle(beforeMs: number): void {
    for (const session of this.sessions.values()) if (session.lastUsedMs < beforeMs) void this.end(session);
  }

  /** The JSON body, or null once an error has been answered (too large, not JSON). */
  private async readBody(request: Request, response: Response): Promise<unknown> {
    const limit = this.options.maxBodyBytes;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) {
        reply(
          response,
          413,
          ErrorCode.InvalidRequest,
          `the message is larger than ${limit} bytes (server.max_message_bytes)`,
        );
        request.destroy();
        return null;
      }
      chunks.push(chunk);
    }
    try {
      return JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      reply(response, 400, ErrorCode.ParseError, "the body is not JSON");
      return null;
    }
  }
}

/** The request headers wayfind reads (FORWARDED_HEADERS), as Fetch headers. */
function forwarded(raw: IncomingMessage["headers"]): Headers {
  const headers = new Headers();
  for (const name of FORWARDED_HEADERS) {
    const value = raw[name];
    if (typeof value === "string" && value !== "") headers.set(name, value);
  }
  return headers;
}

function credentialsOf(headers: Headers): string {
  return createHash("sha256")
    .update(headers.get("authorization") ?? "")
    .update("\n")
    .update(headers.get(CLIENT_CERTIFICATE_HEADER) ?? "")
    .digest("hex");
}

/**
 * Hands a request to its session's transport. The SDK types it for HTTP/1.1, but converts it with
 * @hono/node-server, which reads HTTP/2 requests alike (test/mcp-endpoint/http2.test.ts).
 */
function handleOn(session: Session, request: Request, response: Response, body: unknown): Promise<void> {
  return session.transport.handleRequest(request as IncomingMessage, response as ServerResponse, body);
}

/** A JSON-RPC error answered over plain HTTP (no session, or none that may be used). */
function reply(response: Response, status: number, code: number, message: string): void {
  writeHead(response, status, { "content-type": "application/json" });
  response.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}
