/**
 * One connection to a configured MCP server for the requests wayfind makes on behalf of callers
 * (CallTool and `tool_call`; an MCP session's prompts, resources, completions): separate from the
 * connection that syncs the server's tool list (a replica that does not hold a server's lease still
 * calls it), opened on first use and again after a failure. Whose it is, and so which client the
 * server's own requests reach, is decided in mcp-sources.ts: a tenant's, or one MCP session's.
 */
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CancelledNotificationSchema,
  ErrorCode,
  type LoggingLevel,
  McpError,
  type Notification,
  ProgressNotificationSchema,
  type RequestId,
  type ServerCapabilities,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import { z } from "zod";
import type { McpServerConfig, SecretRef, TenantCredentials } from "../config/index.ts";
import { WayfindError } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import type { SourceCall, ToolCallResult } from "../tools/execute.ts";
import {
  JsonRpcRefusal,
  type ProgressSink,
  type SessionCall,
  type SessionClient,
  wordsOf,
} from "../tools/mcp-session.ts";
import type { CallShare } from "./call-share.ts";
import { ClientAsks } from "./client-asks.ts";
import { configuredValues, createMcpTransport, describe, mcpSourceId, withDeadline } from "./mcp.ts";
import { ownSignal } from "./mcp-fetch.ts";
import { Redactor, StderrTail } from "./upstream-text.ts";

export interface CallLimits {
  /** Largest result passed on, as JSON; a bigger one is refused (it could not be answered anyway). */
  readonly maxResultBytes: number;
  /** Connect plus `initialize` of a call session. */
  readonly connectMs: number;
}

export const DEFAULT_CALL_LIMITS: CallLimits = {
  maxResultBytes: 4 * 1024 * 1024 - 64 * 1024,
  connectMs: 10_000,
};

/** Any JSON object: what the server answers is passed on as it is. */
const ANY_RESULT = z.looseObject({});

/** Log levels from the least severe (MCP, RFC 5424). */
const LOG_LEVELS: readonly LoggingLevel[] = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];

/** A request other than tools/call, passed to the server as it is. */
export interface UpstreamRequest {
  readonly method: string;
  readonly params: JsonObject | undefined;
  /** What the request is about, for errors: `the prompt "x"`. */
  readonly about: string;
  readonly signal: AbortSignal;
  readonly session: SessionCall | undefined;
}

/** Whose connection to which server a call line is, and its bounds (McpCallLine). */
export interface McpCallLineOptions {
  readonly config: McpServerConfig;
  readonly limits: CallLimits;
  readonly logger: Logger;
  readonly tenant: string;
  /** The tenant's own credentials for this server; undefined = the server's own. */
  readonly credentials: TenantCredentials | undefined;
  /** The slots and breaker all of the tenant's connections to the server share. */
  readonly share: CallShare;
  /** The MCP session whose connection this is; undefined = the tenant's. */
  readonly session: SessionClient | undefined;
}

export class McpCallLine {
  readonly source: string;
  /** When a request last used the connection (epoch ms): an idle one is closed. */
  lastUsedMs = Date.now();
  /** The resources this connection subscribed to (a session's: resources/subscribe). */
  readonly subscriptions = new Set<string>();
  /** Counts the server's `list_changed` of prompts and resources: what was read of them before is stale. */
  listsVersion = 0;
  private client: Promise<Client> | undefined;
  /** Requests in flight on this connection. */
  private active = 0;
  private closed = false;
  /**
   * What the session's server last wrote to stderr: logged (redacted) when a call fails, never put
   * in the caller's error (it may hold the tenant's credentials).
   */
  private stderrTail: StderrTail;
  /** Removes the server's and the tenant's credential values from what reaches a caller or the log. */
  private redactor: Redactor;
  /** The progress sinks of the requests in flight, by the token sent with each (expectProgress). */
  private readonly progressSinks = new Map<string, ProgressSink>();
  private progressTokens = 0;
  private readonly asks: ClientAsks;

  private readonly config: McpServerConfig;
  private readonly limits: CallLimits;
  private readonly logger: Logger;
  private readonly tenant: string;
  private readonly credentials: TenantCredentials | undefined;
  private readonly share: CallShare;
  /** The MCP session whose connection this is; undefined = the tenant's. */
  readonly session: SessionClient | undefined;

  constructor(options: McpCallLineOptions) {
    const { config, limits, session } = options;
    this.config = config;
    this.limits = limits;
    this.logger = options.logger;
    this.tenant = options.tenant;
    this.credentials = options.credentials;
    this.share = options.share;
    this.session = session;
    this.source = mcpSourceId(config.name);
    this.redactor = new Redactor(configuredValues(config));
    this.stderrTail = new StderrTail(this.redactor);
    this.asks = new ClientAsks(config, session, limits.maxResultBytes);
  }

  /** tools/call: the server's result, unchanged. */
  call(call: SourceCall): Promise<ToolCallResult> {
    return this.run(
      `the call of "${call.name}"`,
      call.signal,
      call.timeoutMs,
      call.session,
      (client, left, timeout) => this.sendCall(client, call, left, timeout),
    );
  }

  /**
   * Any other request (prompts/get, resources/read, …): the server's result as it is. Its JSON-RPC
   * error comes back as a JsonRpcRefusal with the server's code and words (redacted); wayfind's own
   * failures (unreachable, timed out, breaker open) as a WayfindError.
   */
  request(request: UpstreamRequest): Promise<JsonObject> {
    return this.run(request.about, request.signal, undefined, request.session, (client, left, timeout) =>
      this.sendRequest(client, request, left, timeout),
    );
  }

  /** What the server declared at initialize (connecting first when needed). */
  async capabilities(): Promise<ServerCapabilities> {
    const client = await this.connected();
    return client.getServerCapabilities() ?? {};
  }

  /** The session's log level changed: the server hears it, when it logs. */
  async logLevelChanged(): Promise<void> {
    const open = await this.client?.catch(() => undefined);
    const level = this.session?.logLevel();
    if (open !== undefined && level !== undefined) await this.sendLogLevel(open, level);
  }

  /** The session's roots changed: the server hears it, when the session declared roots. */
  async rootsChanged(): Promise<void> {
    if (this.session?.answers.roots === undefined) return;
    const open = await this.client?.catch(() => undefined);
    await open?.notification({ method: "notifications/roots/list_changed" }).catch(() => undefined);
  }

  /** Ends the connection (a stdio server's process) when nothing uses it; the next request opens one. */
  closeIdleSession(): void {
    if (this.active === 0 && this.subscriptions.size === 0) this.drop();
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    const open = await client?.catch(() => undefined);
    if (open) await ended(open);
  }

  /**
   * Runs one request within the breaker, a slot of the tenant's share and the server's
   * `call_timeout_seconds` (or the less `timeoutMs` asks for).
   */
  private async run<T>(
    what: string,
    signal: AbortSignal,
    timeoutMs: number | undefined,
    session: SessionCall | undefined,
    send: (client: Client, leftMs: number, timeoutMs: number) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw unavailable(this.config.name, "wayfind is stopping");
    const now = Date.now();
    this.lastUsedMs = now;
    this.share.checkBreaker(now);
    const limit = Math.min(timeoutMs ?? Number.POSITIVE_INFINITY, this.config.callTimeoutSeconds * 1000);
    const deadline = now + limit;
    await this.share.slot(what, deadline, signal, () => cancelledError(what));
    this.active++;
    const ended = this.asks.begin(session?.requestId);
    try {
      const client = await this.connected();
      const result = await send(client, deadline - Date.now(), limit);
      this.share.succeeded();
      return result;
    } catch (error) {
      if (error instanceof WayfindError && countsAgainstServer(error)) this.share.failed();
      throw error;
    } finally {
      ended();
      this.active--;
      this.share.release();
    }
  }

  /**
   * A progress token for one request, its reports passed to `sink` until it ends. wayfind keeps the
   * tokens rather than the SDK: the SDK forgets a request's token as its result arrives, before it
   * hands on a report that arrived just ahead of the result (often the last one).
   */
  private expectProgress(sink: ProgressSink | undefined): string | undefined {
    if (sink === undefined) return undefined;
    const token = `wayfind-${++this.progressTokens}`;
    this.progressSinks.set(token, sink);
    return token;
  }

  /** Sends the call with `leftMs` of its `timeoutMs` still to go. */
  private async sendCall(
    client: Client,
    call: SourceCall,
    leftMs: number,
    timeoutMs: number,
  ): Promise<ToolCallResult> {
    // The SDK never removes its abort listener from a request's signal, and the caller's signal is
    // aborted once the caller's RPC ends: on the caller's own signal, every finished call would be
    // cancelled upstream after the fact. The SDK gets a signal of the call's own, unlinked at its end.
    const own = ownSignal(call.signal);
    const progressToken = this.expectProgress(call.session?.onProgress);
    const meta = { ...call.meta, ...(progressToken === undefined ? {} : { progressToken }) };
    let raw: unknown;
    try {
      raw = await client.request(
        {
          method: "tools/call",
          params: {
            name: call.name,
            arguments: call.arguments,
            ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}),
          },
        },
        CallToolResultSchema,
        { signal: own.signal, timeout: Math.max(1, leftMs) },
      );
    } catch (error) {
      if (call.signal.aborted) throw cancelledError(`the call of "${call.name}"`);
      if (error instanceof McpError && !isTransportFault(error))
        throw new WayfindError(
          "failed_precondition",
          `MCP server "${this.config.name}" refused the call of "${call.name}": ${this.redactor.redact(wordsOf(error))}`,
        );
      throw this.failure(error, `the call of "${call.name}"`, timeoutMs);
    } finally {
      own.release();
      if (progressToken !== undefined) this.progressSinks.delete(progressToken);
    }
    const bytes = this.checkSize(raw, `the result of "${call.name}"`);
    const result = raw as { content?: JsonObject[]; structuredContent?: JsonObject; isError?: boolean };
    return {
      content: result.content ?? [],
      ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
      isError: result.isError === true,
      bytes,
    };
  }

  private async sendRequest(
    client: Client,
    request: UpstreamRequest,
    leftMs: number,
    timeoutMs: number,
  ): Promise<JsonObject> {
    const own = ownSignal(request.signal);
    const progressToken = this.expectProgress(request.session?.onProgress);
    const params =
      progressToken === undefined
        ? request.params
        : { ...request.params, _meta: { ...(request.params?._meta as JsonObject), progressToken } };
    try {
      const result = await client.request(
        { method: request.method, ...(params === undefined ? {} : { params }) },
        ANY_RESULT,
        { signal: own.signal, timeout: Math.max(1, leftMs) },
      );
      this.checkSize(result, `the answer to ${request.method}`);
      return result as JsonObject;
    } catch (error) {
      if (request.signal.aborted) throw cancelledError(request.about);
      if (error instanceof McpError && !isTransportFault(error))
        throw new JsonRpcRefusal(error.code, this.redactor.redact(wordsOf(error)), error.data);
      if (error instanceof WayfindError) throw error;
      throw this.failure(error, request.about, timeoutMs);
    } finally {
      own.release();
      if (progressToken !== undefined) this.progressSinks.delete(progressToken);
    }
  }

  /** The size of an answer as JSON; RESOURCE_EXHAUSTED past what an answer may hold. */
  private checkSize(answer: unknown, what: string): number {
    const bytes = Buffer.byteLength(JSON.stringify(answer));
    if (bytes > this.limits.maxResultBytes)
      throw new WayfindError(
        "resource_exhausted",
        `${what} from MCP server "${this.config.name}" is ${bytes} bytes of JSON, ` +
          `more than the ${this.limits.maxResultBytes} wayfind passes on; ask for less`,
      );
    return bytes;
  }

  /** What became of a request that got no answer: timed out, or the connection failed under it. */
  private failure(error: unknown, what: string, timeoutMs: number): WayfindError {
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
      return new WayfindError(
        "deadline_exceeded",
        `MCP server "${this.config.name}" did not answer ${what} within ${timeoutMs} ms`,
      );
    // A closed connection, an answer that is no JSON-RPC result, the transport failing under it.
    this.drop();
    const reason =
      error instanceof McpError && error.code === ErrorCode.ConnectionClosed
        ? "the connection closed during the call"
        : describe(error);
    return this.unavailable(what, reason, error);
  }

  /**
   * UNAVAILABLE for a request the server failed, in words the caller may read (redacted); the
   * server's stderr goes to the log alone.
   */
  private unavailable(what: string | undefined, reason: string, error: unknown): WayfindError {
    const stderr = this.stderrTail.lastLines();
    this.logger.warn(
      {
        source: this.source,
        tenant: this.tenant || undefined,
        request: what,
        reason: this.redactor.redact(String(error)),
        stderr: stderr || undefined,
      },
      "mcp server failed a call",
    );
    const hint = stderr === "" ? "" : " (its stderr is in wayfind's log)";
    return unavailable(this.config.name, `${this.redactor.redact(reason)}${hint}`);
  }

  /** The connection, opened on first use and after a failure dropped it. */
  private connected(): Promise<Client> {
    this.client ??= this.open().catch((error: unknown) => {
      this.client = undefined;
      throw this.unavailable(undefined, `could not connect: ${describe(error)}`, error);
    });
    return this.client;
  }

  private async open(): Promise<Client> {
    // Declares what the session's client answers, and nothing for a tenant's connection.
    const client = new Client(
      { name: "wayfind", version: "0.1.0" },
      { capabilities: this.asks.capabilities() },
    );
    const tenantSecrets: string[] = [];
    const config = this.credentials
      ? withCredentials(this.config, this.credentials, (value) => tenantSecrets.push(value))
      : this.config;
    this.redactor = new Redactor([...configuredValues(this.config), ...tenantSecrets]);
    this.stderrTail = new StderrTail(this.redactor);
    const tail = this.stderrTail;
    const transport = createMcpTransport(config, (text) => tail.append(text));
    client.setNotificationHandler(ProgressNotificationSchema, ({ params }) => {
      const { progress, total, message } = params;
      this.progressSinks.get(String(params.progressToken))?.({
        progress,
        ...(total === undefined ? {} : { total }),
        ...(message === undefined ? {} : { message }),
      });
    });
    client.fallbackNotificationHandler = async (notification) => this.heard(notification);
    // The server's requests for the client, each cancellable by the server. The SDK ignores the
    // cancellation of request id 0 (it tests the id for truthiness), which is a server's first
    // request: wayfind keeps the requests it is answering and cancels them itself.
    const answering = new Map<RequestId, AbortController>();
    client.setNotificationHandler(CancelledNotificationSchema, ({ params }) => {
      if (params.requestId !== undefined) answering.get(params.requestId)?.abort(params.reason);
    });
    client.fallbackRequestHandler = async (request, extra) => {
      const cancelled = new AbortController();
      answering.set(request.id, cancelled);
      try {
        // biome-ignore lint/suspicious/noExplicitAny: the client's answer, passed back as it is.
        return (await this.asks.answer(request, AbortSignal.any([extra.signal, cancelled.signal]))) as any;
      } finally {
        answering.delete(request.id);
      }
    };
    client.onclose = () => {
      // Only the live connection's close matters; one that never opened has no session to drop.
      this.client?.then((open) => open === client && this.drop()).catch(() => undefined);
    };
    try {
      await withDeadline(client.connect(transport), this.limits.connectMs, "initialize");
    } catch (error) {
      void client.close().catch(() => undefined);
      throw error;
    }
    const level = this.session?.logLevel();
    if (level !== undefined) await this.sendLogLevel(client, level);
    this.logger.info(
      {
        source: this.source,
        tenant: this.tenant,
        ...(this.session ? { session: this.session.sessionId } : {}),
      },
      "mcp call session opened",
    );
    return client;
  }

  private async sendLogLevel(client: Client, level: LoggingLevel): Promise<void> {
    if (client.getServerCapabilities()?.logging === undefined) return;
    await client
      .request({ method: "logging/setLevel", params: { level } }, ANY_RESULT, {
        timeout: this.limits.connectMs,
      })
      .catch((error: unknown) =>
        this.logger.debug({ source: this.source, err: error }, "mcp server refused logging/setLevel"),
      );
  }

  /**
   * A notification of the server outside a request's progress: a session's connection passes log
   * messages (at the session's level), updates of the resources it subscribed to and changed lists
   * on to its client; a tenant's connection has no one to tell.
   */
  private heard(notification: Notification): void {
    const { method } = notification;
    const params = (notification.params ?? {}) as JsonObject;
    if (method === "notifications/prompts/list_changed" || method === "notifications/resources/list_changed")
      this.listsVersion++;
    const session = this.session;
    if (session === undefined) return;
    const tell = (passed: JsonObject) => session.tell({ method, params: passed }, this.asks.related);
    switch (method) {
      case "notifications/message": {
        const level = session.logLevel();
        const severity = LOG_LEVELS.indexOf(params.level as LoggingLevel);
        if (severity < 0 || (level !== undefined && severity < LOG_LEVELS.indexOf(level))) return;
        const logger = typeof params.logger === "string" ? params.logger : undefined;
        const namespace = this.config.namespace;
        tell({
          ...params,
          ...(namespace === "" ? {} : { logger: logger ? `${namespace}.${logger}` : namespace }),
        });
        return;
      }
      case "notifications/resources/updated":
        if (typeof params.uri === "string" && this.subscriptions.has(params.uri)) tell(params);
        return;
      case "notifications/prompts/list_changed":
      case "notifications/resources/list_changed":
        tell(params);
        return;
      case "notifications/elicitation/complete":
        if (session.answers.elicitation !== undefined) tell(params);
        return;
    }
  }

  /** Forgets the connection; the next request opens a new one. */
  private drop(): void {
    const client = this.client;
    this.client = undefined;
    this.subscriptions.clear();
    void client?.then(ended).catch(() => undefined);
  }
}

/**
 * Closes a connection; an HTTP server is told its session has ended (DELETE) first, so what it still
 * asks of the session's client is refused at once instead of waiting for an answer that cannot come.
 */
async function ended(client: Client): Promise<void> {
  const transport = client.transport;
  if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined)
    await withDeadline(transport.terminateSession(), 1_000, "close").catch(() => undefined);
  await withDeadline(client.close(), 5_000, "close").catch(() => undefined);
}

/**
 * The server's config with a tenant's credentials added: headers (HTTP) or environment (stdio).
 * `secret` is told each value read, to keep it out of whatever the server writes back.
 */
function withCredentials(
  config: McpServerConfig,
  credentials: TenantCredentials,
  secret: (value: string) => void,
): McpServerConfig {
  const read = (refs: Readonly<Record<string, SecretRef>>) =>
    Object.fromEntries(
      Object.entries(refs).map(([key, ref]) => {
        const value = readSecret(ref);
        secret(value);
        return [key, value];
      }),
    );
  return config.transport === "stdio"
    ? { ...config, env: { ...config.env, ...read(credentials.env) } }
    : { ...config, headers: { ...config.headers, ...read(credentials.headers) } };
}

/** A secret's value, read when a session opens (so a rotated file is picked up); errors never show it. */
function readSecret(ref: SecretRef): string {
  if ("env" in ref) {
    const value = process.env[ref.env];
    if (!value) throw new Error(`the environment variable ${ref.env} (a tenant's credential) is not set`);
    return value;
  }
  try {
    return readFileSync(ref.file, "utf8").trimEnd();
  } catch {
    throw new Error(`the file ${ref.file} (a tenant's credential) cannot be read`);
  }
}

/** An McpError of the connection (timed out, closed, garbage), not one the server answered. */
function isTransportFault(error: McpError): boolean {
  return (
    error.code === ErrorCode.RequestTimeout ||
    error.code === ErrorCode.ConnectionClosed ||
    error.code === ErrorCode.InternalError
  );
}

function countsAgainstServer(error: WayfindError): boolean {
  return error.code === "unavailable" || error.code === "deadline_exceeded";
}

function cancelledError(what: string): WayfindError {
  return new WayfindError("cancelled", `${what} was cancelled`);
}

function unavailable(server: string, reason: string): WayfindError {
  return new WayfindError("unavailable", `MCP server "${server}" cannot be reached: ${reason}`);
}
