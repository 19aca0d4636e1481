/**
 * wayfind as an MCP server (docs/mcp.md): Streamable HTTP at `/mcp` on the service port, one SDK
 * `Server` per session. A session is opened by `initialize` with credentials the server accepts and
 * stays bound to them; every tool call is a wayfind RPC made with the request's own credentials, so
 * roles, tenant visibility and limits are the port's.
 */

import { createHash, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import * as http2 from "node:http2";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ErrorCode, isInitializeRequest, isJSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import { CLIENT_CERTIFICATE_HEADER } from "../auth/index.ts";
import type { Caller, Principal } from "../caller/caller.ts";
import type { McpEndpointConfig, McpToolList } from "../config/index.ts";
import { errorReason } from "../errors.ts";
import { writeHead } from "../http-response.ts";
import type { McpGateway } from "../sources/mcp-gateway.ts";
import { SESSION_CALL, type SessionCall } from "../tools/mcp-session.ts";
import { type MessageProblem, messageProblem } from "./messages.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import type { SessionClientOf } from "./session-client.ts";
import { type PooledSession, SessionPool } from "./session-pool.ts";
import { type RequestExtra, sessionServer } from "./session-server.ts";
import { SessionTransport } from "./session-transport.ts";
import { StatelessRequests } from "./stateless.ts";

/** Streamable HTTP is served over HTTP/1.1 and HTTP/2 alike (the SDK's transport takes either). */
type Request = IncomingMessage | http2.Http2ServerRequest;
type Response = ServerResponse | http2.Http2ServerResponse;

export const MCP_PATH = "/mcp";

/**
 * Request headers passed on to wayfind's RPCs and to authentication: credentials, the development
 * operator role and tenant (servers without credentials), trace context.
 */
const FORWARDED_HEADERS = [
  "authorization",
  "wayfind-role",
  "wayfind-tenant",
  "wayfind-project",
  "wayfind-user",
  "traceparent",
  "tracestate",
];

/** How long a client whose stream ended waits before it reconnects (the SSE `retry` field). */
const RECONNECT_AFTER_MS = 1_000;

/** How the endpoint learns who a request acts as, and hears when that stops being accepted. */
interface McpCredentials {
  /** The principal the headers' credentials are; throws (an UNAUTHENTICATED error saying why) otherwise. */
  authenticate(headers: Headers): Promise<Principal>;
  /**
   * The caller a request of `principal` acts as, claiming `claimed`, admitted as an RPC is: the agent
   * role, the principal's limits, the caller bound to the credential; throws (PERMISSION_DENIED,
   * RESOURCE_EXHAUSTED) otherwise.
   */
  admit(principal: Principal, claimed: Caller): Caller;
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
  /** What the MCP servers behind wayfind offer besides tools; undefined = none are configured. */
  readonly gateway: McpGateway | undefined;
  readonly credentials: McpCredentials;
  readonly config: McpEndpointConfig;
  /** The largest request body read. */
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  readonly version: string;
  readonly peers?: McpPeers | undefined;
}

interface Session extends PooledSession {
  readonly transport: SessionTransport;
  readonly server: Server;
  readonly client: SessionClientOf;
  /** Who its last request was authenticated as (the same credential each time, newly checked). */
  principal: Principal;
  /** sha256 of the credentials that opened it: every later request must carry the same. */
  readonly credentials: string;
  /** The verified client certificate that opened it (mTLS), sent on with its calls; "" = none. */
  readonly certificate: string;
  /** Stops watching its credential. */
  releaseCredential: () => void;
}

export class McpEndpoint {
  private readonly sessions: SessionPool<Session>;
  private readonly stateless: StatelessRequests;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: McpEndpointOptions) {
    this.sessions = new SessionPool(options.config);
    this.stateless = new StatelessRequests(options);
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
    await Promise.all([
      ...[...this.sessions.values()].map((session) => this.end(session)),
      this.stateless.close(),
    ]);
  }

  /**
   * One request, after the request gate (src/server/transport/request-gate.ts: Host, Origin, body deadline):
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
      body = read.body;
    }
    if (session === undefined && (await this.stateless.isModern(request, body)))
      return this.serveModern(request, response, body, headers, principal);
    const problem = request.method === "POST" ? messageProblem(body) : undefined;
    if (problem !== undefined) return answerProblem(response, problem);
    if (session !== undefined) {
      session.lastUsedMs = Date.now();
      session.principal = principal;
      return handleOn(session, request, response, body);
    }
    if (!isJSONRPCRequest(body) || !isInitializeRequest(body))
      return reply(
        response,
        400,
        ErrorCode.InvalidRequest,
        "no Mcp-Session-Id header: send initialize first",
      );
    // What a session does is an agent's work: a credential that may do none of it is told at once.
    try {
      this.options.credentials.admit(principal, claimedCaller(headers, ""));
    } catch (error) {
      return reply(response, 403, ErrorCode.InvalidRequest, errorReason(error), body.id);
    }
    const opened = await this.open(headers, principal, toolList.mode);
    handleOn(opened, request, response, body);
  }

  /**
   * A request of the 2026-07-28 revision: admitted on its own (no session holds its credentials),
   * and answered by whichever process has it.
   */
  private async serveModern(
    request: Request,
    response: Response,
    body: unknown,
    headers: Headers,
    principal: Principal,
  ): Promise<void> {
    let caller: Caller;
    // Each request is a run of its own: a deferred tool it calls is activated for it alone.
    const runId = `mcp-${randomUUID()}`;
    try {
      caller = this.options.credentials.admit(principal, { ...claimedCaller(headers, ""), runId });
    } catch (error) {
      return reply(response, 403, ErrorCode.InvalidRequest, errorReason(error), requestIdOf(body));
    }
    await this.stateless.serve(request, response, body, {
      caller,
      principal: principal.id,
      scope: (signal, call) => ({
        caller: { tenantId: caller.tenantId, projectId: caller.projectId, userId: caller.userId, runId },
        headers,
        signal,
        contextValues: createContextValues().set(SESSION_CALL, call),
      }),
    });
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
    const { server, client } = sessionServer({
      id,
      tenant: principal.tenantId,
      toolList,
      clients: this.options.clients,
      gateway: this.options.gateway,
      version: this.options.version,
      scope: (extra, call) => this.scopeOf(id, extra, call),
      admit: (extra) => this.admit(id, extra),
    });
    // Each answer is a stream (SSE), so a call's progress and a server's requests can go before its
    // result; its events are kept a while, so a client whose stream broke resumes it (Last-Event-ID).
    const transport = new SessionTransport(id, RECONNECT_AFTER_MS);
    const session: Session = {
      id,
      principalId: principal.id,
      tenant: principal.tenantId,
      transport,
      server,
      client,
      principal,
      credentials: credentialsOf(headers),
      certificate: headers.get(CLIENT_CERTIFICATE_HEADER) ?? "",
      lastUsedMs: Date.now(),
      releaseCredential: () => {},
    };
    // The client ended it (DELETE), or it was closed here.
    transport.onclose = () => void this.forget(session);
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

  /** What the RPCs made for a request of session `sessionId` carry (CallTool: the session call too). */
  private scopeOf(sessionId: string, extra: RequestExtra, call: SessionCall): CallScope {
    // Only the session's own certificate: the SDK rebuilds a request's headers from what the client
    // sent, where a certificate header could be forged.
    const headers = forwarded(extra.requestInfo?.headers ?? {});
    const certificate = this.sessions.get(sessionId)?.certificate ?? "";
    if (certificate !== "") headers.set(CLIENT_CERTIFICATE_HEADER, certificate);
    const caller = claimedCaller(headers, sessionId);
    return {
      caller: {
        tenantId: caller.tenantId,
        projectId: caller.projectId,
        userId: caller.userId,
        sessionId,
        runId: sessionId,
      },
      headers,
      signal: extra.signal,
      contextValues: createContextValues().set(SESSION_CALL, call),
    };
  }

  /** The caller a request of session `sessionId` acts as, admitted (src/auth admitMcpRequest). */
  private admit(sessionId: string, extra: RequestExtra): Caller {
    const session = this.sessions.get(sessionId);
    if (session === undefined) throw new ConnectError("the session has ended", Code.Unauthenticated);
    return this.options.credentials.admit(
      session.principal,
      claimedCaller(forwarded(extra.requestInfo?.headers ?? {}), sessionId),
    );
  }

  private async end(session: Session): Promise<void> {
    await this.forget(session);
    await session.server.close().catch(() => undefined);
  }

  /** A session ends: its credential is no longer watched, and its own connections to MCP servers close. */
  private async forget(session: Session): Promise<void> {
    if (!this.sessions.delete(session)) return;
    session.releaseCredential();
    session.client.end();
    await this.options.gateway?.sessionEnded(session.id).catch(() => undefined);
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

/** The caller a request's headers claim (a server without credentials trusts them), in session `sessionId`. */
function claimedCaller(headers: Headers, sessionId: string): Caller {
  return {
    tenantId: headers.get("wayfind-tenant") ?? "",
    projectId: headers.get("wayfind-project") ?? "",
    userId: headers.get("wayfind-user") ?? "",
    sessionId,
    runId: sessionId,
    entitlements: [],
    narrowToTools: [],
  };
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

/** Hands a request to its session's transport (HTTP/1.1 and HTTP/2 alike: session-transport.ts). */
function handleOn(session: Session, request: Request, response: Response, body: unknown): void {
  session.transport.handle(request, response, body);
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

/** The id of a JSON-RPC request body, to answer it with; null when it has none. */
function requestIdOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | undefined)?.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}
