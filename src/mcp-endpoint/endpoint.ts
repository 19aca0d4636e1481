/**
 * wayfind as an MCP server (docs/mcp.md): Streamable HTTP at `/mcp` on the service port, one SDK
 * `Server` per session. A session is opened by `initialize` with credentials the server accepts and
 * stays bound to them; every tool call is a wayfind RPC made with the request's own credentials, so
 * roles, tenant visibility and limits are the port's.
 */

import { createHash, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import * as http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
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
import { CLIENT_CERTIFICATE_HEADER } from "../auth/index.ts";
import type { Principal } from "../caller/caller.ts";
import type { McpEndpointConfig, McpToolList } from "../config/index.ts";
import { errorReason } from "../errors.ts";
import { writeHead } from "../http-response.ts";
import type { JsonObject } from "../json.ts";
import { PROGRESS_SINK_HEADER, type ProgressSinks, type ToolProgress } from "../tools/progress.ts";
import { type MessageProblem, messageProblem } from "./messages.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { type PooledSession, SessionPool } from "./session-pool.ts";
import { getPrompt, listPrompts, listResources, readResource } from "./session-skills.ts";
import { SessionTools } from "./session-tools.ts";

/** Streamable HTTP is served over HTTP/1.1 and HTTP/2 alike (the SDK's transport takes either). */
type Request = IncomingMessage | http2.Http2ServerRequest;
type Response = ServerResponse | http2.Http2ServerResponse;

export const MCP_PATH = "/mcp";

/**
 * Request headers passed on to wayfind's RPCs and to authentication: credentials, the development
 * operator role and tenant (servers without credentials), trace context.
 */
const FORWARDED_HEADERS = ["authorization", "wayfind-role", "wayfind-tenant", "traceparent", "tracestate"];

/** How the endpoint learns who a request acts as, and hears when that stops being accepted. */
interface McpCredentials {
  /** The principal the headers' credentials are; throws (an UNAUTHENTICATED error saying why) otherwise. */
  authenticate(headers: Headers): Promise<Principal>;
  /**
   * Calls `lost` with why once the credential in `headers` is no longer accepted (revoked, expired);
   * returns the release.
   */
  watch(headers: Headers, principal: Principal, lost: (reason: string) => void): () => void;
}

/**
 * The other processes serving this port (`serve --workers`), each holding the sessions it opened:
 * a request of another's session is passed on to it (src/server/mcp-peers.ts).
 */
export interface McpPeers {
  /** Starts the id of every session this process opens, so the others know whose it is. */
  readonly sessionPrefix: string;
  /**
   * Passes a request of another process's session on to it, answering with `unreachable` if that
   * process is gone; false when the session would be this process's.
   */
  forward(sessionId: string, request: Request, response: Response, unreachable: () => void): boolean;
}

export interface McpEndpointOptions {
  readonly clients: WayfindClients;
  /** Where the in-process CallTool finds the sink a call's progress goes to. */
  readonly progress: ProgressSinks;
  readonly credentials: McpCredentials;
  readonly config: McpEndpointConfig;
  /** The largest request body read. */
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  readonly version: string;
  readonly peers?: McpPeers | undefined;
}

interface Session extends PooledSession {
  readonly transport: StreamableHTTPServerTransport;
  readonly server: Server;
  /** sha256 of the credentials that opened it: every later request must carry the same. */
  readonly credentials: string;
  /** The verified client certificate that opened it (mTLS), sent on with its calls; "" = none. */
  readonly certificate: string;
  /** Stops watching its credential. */
  releaseCredential: () => void;
}

export class McpEndpoint {
  private readonly sessions: SessionPool<Session>;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: McpEndpointOptions) {
    this.sessions = new SessionPool(options.config);
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

  /**
   * One request, after the request gate (src/server/request-gate.ts: Host, Origin, body deadline):
   * its credentials are checked before its body is read (every request, so a revoked key's session
   * answers nothing more), then the body is read within its size limit and checked as JSON-RPC.
   */
  private async serve(request: Request, response: Response): Promise<void> {
    if (this.closed) return reply(response, 503, ErrorCode.ConnectionClosed, "the server is stopping");
    const sessionId = request.headers["mcp-session-id"];
    if (
      typeof sessionId === "string" &&
      this.options.peers?.forward(sessionId, request, response, () => sessionNotFound(response))
    )
      return;
    const toolList = this.toolListAsked(request.url ?? "");
    if (toolList.error !== undefined) return reply(response, 400, ErrorCode.InvalidRequest, toolList.error);
    if (!["POST", "GET", "DELETE"].includes(request.method ?? ""))
      return reply(response, 405, ErrorCode.InvalidRequest, "use POST, GET or DELETE on /mcp");
    const headers = forwarded(request.headers);
    // Set by the transport from the TLS connection alone (a client cannot send its own): mTLS.
    const certificate = request.headers[CLIENT_CERTIFICATE_HEADER];
    if (typeof certificate === "string") headers.set(CLIENT_CERTIFICATE_HEADER, certificate);
    let principal: Principal;
    try {
      principal = await this.options.credentials.authenticate(headers);
    } catch (error) {
      return reply(response, 401, ErrorCode.InvalidRequest, errorReason(error));
    }
    const id = request.headers["mcp-session-id"];
    const session = typeof id === "string" ? this.sessions.get(id) : undefined;
    // Another credential's session is not found, exactly as one that does not exist.
    if (typeof id === "string" && (session === undefined || session.credentials !== credentialsOf(headers)))
      return sessionNotFound(response);
    let body: unknown;
    if (request.method === "POST") {
      const read = await this.readBody(request, response);
      if (read === undefined) return;
      const problem = messageProblem(read.body);
      if (problem !== undefined) return answerProblem(response, problem);
      body = read.body;
    }
    if (session !== undefined) {
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
    const opened = await this.open(headers, principal, toolList.mode);
    await handleOn(opened, request, response, body);
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

  /**
   * A new session for `principal`. Past a quota (server.mcp.max_sessions_per_credential,
   * max_sessions_per_tenant, max_sessions) a session of whoever is over it is closed first.
   */
  private async open(headers: Headers, principal: Principal, toolList: McpToolList): Promise<Session> {
    const evicted = this.sessions.evictionFor(principal.id, principal.tenantId);
    if (evicted !== undefined) {
      this.options.logger.info(
        { session: evicted.id, principal: evicted.principalId, tenant: evicted.tenant || undefined },
        "mcp session closed to admit a new one (server.mcp.max_sessions*)",
      );
      await this.end(evicted);
    }
    const id = `${this.options.peers?.sessionPrefix ?? ""}${randomUUID()}`;
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
      principalId: principal.id,
      tenant: principal.tenantId,
      transport,
      server,
      credentials: credentialsOf(headers),
      certificate: headers.get(CLIENT_CERTIFICATE_HEADER) ?? "",
      lastUsedMs: Date.now(),
      releaseCredential: () => {},
    };
    transport.onclose = () => {
      if (this.sessions.delete(session)) session.releaseCredential();
    };
    await server.connect(transport);
    this.sessions.add(session);
    // A revoked or expired credential's session is closed with its streams; the client's next
    // request is answered 401 with the reason.
    session.releaseCredential = this.options.credentials.watch(headers, principal, (reason) => {
      this.options.logger.info(
        { session: id, principal: principal.id, reason },
        "mcp session closed: its credential is no longer accepted",
      );
      void this.end(session);
    });
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
    if (this.sessions.delete(session)) session.releaseCredential();
    await session.server.close().catch(() => undefined);
  }

  private closeIdle(beforeMs: number): void {
    for (const session of this.sessions.values()) if (session.lastUsedMs < beforeMs) void this.end(session);
  }

  /**
   * The parsed JSON body, or undefined once an error has been answered: declared or grown larger
   * than server.max_message_bytes (refused unread), cut by the body deadline, or not JSON.
   */
  private async readBody(request: Request, response: Response): Promise<{ body: unknown } | undefined> {
    const limit = this.options.maxBodyBytes;
    const tooLarge = () =>
      reply(
        response,
        413,
        ErrorCode.InvalidRequest,
        `the message is larger than ${limit} bytes (server.max_message_bytes)`,
      );
    if (Number(request.headers["content-length"]) > limit) return tooLarge();
    const read = await bodyOf(request, limit);
    if (read === "too large") return tooLarge();
    if (read instanceof Error) {
      // The body deadline (the request gate): the client stopped sending.
      if (read instanceof ConnectError && read.code === Code.DeadlineExceeded)
        return reply(response, 408, ErrorCode.RequestTimeout, read.rawMessage);
      response.destroy();
      return undefined;
    }
    try {
      return { body: JSON.parse(read.toString("utf8")) };
    } catch {
      return reply(response, 400, ErrorCode.ParseError, "the body is not JSON");
    }
  }
}

/**
 * The whole body, "too large" past `limit` bytes (the rest is left unread: the connection or stream
 * is closed once the answer is out), or the error that cut it short.
 */
function bodyOf(request: Request, limit: number): Promise<Buffer | "too large" | Error> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (result: Buffer | "too large" | Error) => {
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("error", onError);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else {
        request.pause();
        done("too large");
      }
    };
    const onEnd = () => done(Buffer.concat(chunks));
    const onError = (error: Error) => done(error);
    request.on("data", onData);
    request.on("end", onEnd);
    request.on("error", onError);
  });
}

function sessionNotFound(response: Response): void {
  reply(response, 404, -32001, "session not found: initialize a new one");
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

/**
 * A JSON-RPC error answered over plain HTTP (no session, or none that may be used). A body still
 * coming is not read: HTTP/1.1 closes the connection after the answer (connections.ts), and an
 * HTTP/2 stream is ended here.
 */
function reply(
  response: Response,
  status: number,
  code: number,
  message: string,
  id: string | number | null = null,
): undefined {
  writeHead(response, status, { "content-type": "application/json" });
  response.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id }), () => {
    if (!("stream" in response)) return;
    const { stream } = response;
    if (!stream.destroyed && stream.state.remoteClose !== 1) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  });
  return undefined;
}

/** A body that is no valid message (400), or a request with invalid params (its JSON-RPC error). */
function answerProblem(response: Response, problem: MessageProblem): undefined {
  return reply(response, problem.id === null ? 400 : 200, problem.code, problem.message, problem.id);
}
