/**
 * A session's MCP client as the MCP servers behind wayfind reach it (src/tools/mcp-session.ts): what
 * it declared it answers, the log level it asked for, and the way back to it — a server's request or
 * notification goes in the stream of the session's request it came with while that stream is open,
 * else in the session's own (GET) stream. Bounded: MAX_WAITING requests may wait for the client's
 * answer at once, across every server; more are refused at once, and nothing is passed on once the
 * session has ended.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  ErrorCode,
  type LoggingLevel,
  McpError,
  type RequestId,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { JsonObject } from "../json.ts";
import {
  type ClientAnswers,
  clientAnswersOf,
  JsonRpcRefusal,
  type PassedMessage,
  type SessionClient,
  wordsOf,
} from "../tools/mcp-session.ts";

/** Requests that may wait for one session's client at once. */
const MAX_WAITING = 16;

/** Any JSON object: the client's answer is passed on as it is. */
const ANY_RESULT = z.looseObject({});

export class SessionClientOf implements SessionClient {
  private waiting = 0;
  private level: LoggingLevel | undefined;
  private subscribed = false;
  private closed = false;
  private declared: ClientAnswers | undefined;
  /** The session's requests being answered, whose streams are open. */
  private readonly open = new Set<RequestId>();

  constructor(
    private readonly server: Server,
    readonly sessionId: string,
    readonly tenantId: string,
  ) {}

  /** What the client declared at initialize that it answers (none before it initialized). */
  get answers(): ClientAnswers {
    if (this.declared !== undefined) return this.declared;
    const capabilities = this.server.getClientCapabilities();
    if (capabilities === undefined) return {};
    this.declared = clientAnswersOf(capabilities);
    return this.declared;
  }

  ownConnections(): boolean {
    return this.subscribed || this.level !== undefined || Object.keys(this.answers).length > 0;
  }

  ended(): boolean {
    return this.closed;
  }

  logLevel(): LoggingLevel | undefined {
    return this.level;
  }

  /** logging/setLevel: the session hears log messages from then on, at this level and above. */
  setLogLevel(level: LoggingLevel): void {
    this.level = level;
  }

  /** The session subscribed to a resource: its updates come on connections of its own. */
  subscribing(): void {
    this.subscribed = true;
  }

  /** Marks a request of the session open until the returned function is called. */
  answering(requestId: RequestId): () => void {
    this.open.add(requestId);
    return () => this.open.delete(requestId);
  }

  end(): void {
    this.closed = true;
  }

  async ask(
    request: PassedMessage,
    options: {
      readonly related: RequestId | undefined;
      readonly signal: AbortSignal;
      readonly timeoutMs: number;
    },
  ): Promise<JsonObject> {
    if (this.closed)
      throw new JsonRpcRefusal(ErrorCode.InvalidRequest, "the MCP session this connection served has ended");
    if (this.waiting >= MAX_WAITING)
      throw new JsonRpcRefusal(
        ErrorCode.InvalidRequest,
        `the client already has ${MAX_WAITING} requests to answer, the most wayfind lets wait; ask again once it has answered`,
      );
    this.waiting++;
    try {
      return (await this.server.request(request as ServerRequest, ANY_RESULT, {
        relatedRequestId: this.stream(options.related),
        signal: options.signal,
        timeout: options.timeoutMs,
      })) as JsonObject;
    } catch (error) {
      if (error instanceof McpError) throw new JsonRpcRefusal(error.code, wordsOf(error), error.data);
      throw error;
    } finally {
      this.waiting--;
    }
  }

  tell(notification: PassedMessage, related: RequestId | undefined): void {
    if (this.closed) return;
    this.server
      .notification(notification as ServerNotification, { relatedRequestId: this.stream(related) })
      .catch(() => undefined);
  }

  /** The request whose stream a message goes in: `related` while it is open, else the session's own. */
  private stream(related: RequestId | undefined): RequestId | undefined {
    return related !== undefined && this.open.has(related) ? related : undefined;
  }
}
