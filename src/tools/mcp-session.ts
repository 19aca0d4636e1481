/**
 * What a call made for a session of wayfind's MCP endpoint carries down to the MCP server that runs
 * it (docs/mcp.md "Through wayfind"): where the server's progress goes, and the session's MCP client,
 * which the server may ask for sampling, elicitation and roots. The endpoint calls wayfind in this
 * process; the call reaches the CallTool handler as a context value (SESSION_CALL), which only the
 * in-process transport carries: a call from the port never has one.
 */
import { createContextKey } from "@connectrpc/connect";
import type { LoggingLevel, RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { JsonObject } from "../json.ts";

/** One progress notification, as MCP's `notifications/progress` carries it (less the token). */
interface ToolProgress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

export type ProgressSink = (progress: ToolProgress) => void;

/** What a client declared at `initialize` that it answers, as it declared it. */
export interface ClientAnswers {
  readonly sampling?: JsonObject;
  readonly elicitation?: JsonObject;
  readonly roots?: JsonObject;
}

/** The methods a server may ask a client, with the capability that answers each. */
export const CLIENT_METHODS: Readonly<Record<string, keyof ClientAnswers>> = {
  "sampling/createMessage": "sampling",
  "elicitation/create": "elicitation",
  "roots/list": "roots",
};

/** What a client declared it answers, out of the capabilities it declared (each an object). */
export function clientAnswersOf(capabilities: Readonly<Record<string, unknown>>): ClientAnswers {
  const answers: Record<string, JsonObject> = {};
  for (const name of new Set(Object.values(CLIENT_METHODS))) {
    const declared = capabilities[name];
    if (declared !== null && typeof declared === "object") answers[name] = declared as JsonObject;
  }
  return answers;
}

/** A message passed between a server and a client: method and params, as sent. */
export interface PassedMessage {
  readonly method: string;
  readonly params?: JsonObject;
}

/**
 * The MCP client of one session, as the MCP servers behind wayfind reach it. Nothing a server sends
 * names a session: a session that can be asked or told anything (it declared what it answers, asked
 * for log messages or subscribed to a resource) talks to each server on a connection of its own, and
 * what arrives on that connection is for it alone (src/sources/mcp-calls.ts).
 */
export interface SessionClient {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly answers: ClientAnswers;
  /** Whether the session talks to MCP servers on connections of its own (see above). */
  ownConnections(): boolean;
  /** Whether the session has ended: nothing more is asked of or told to it. */
  ended(): boolean;
  /** The least severe log message the session wants (logging/setLevel); undefined = every one. */
  logLevel(): LoggingLevel | undefined;
  /**
   * Asks the client (its answer's result, or a JsonRpcRefusal): in the stream of request `related`
   * of the session while that request is open, else in the session's own stream.
   */
  ask(
    request: PassedMessage,
    options: {
      readonly related: RequestId | undefined;
      readonly signal: AbortSignal;
      readonly timeoutMs: number;
    },
  ): Promise<JsonObject>;
  /** Tells the client (a log message, a resource update, a changed list); never fails. */
  tell(notification: PassedMessage, related: RequestId | undefined): void;
}

/** What an MCP request carries to the server that answers it. */
export interface SessionCall {
  /**
   * The session's client; undefined for a 2026-07-28 request, which has no session: the servers
   * reach it only through the request's own answer.
   */
  readonly client?: SessionClient | undefined;
  /** The session's request (its `tools/call`, `prompts/get`, …), whose stream a server's requests go in. */
  readonly requestId: RequestId;
  /** Where the server's progress goes; undefined = the client asked for none. */
  readonly onProgress: ProgressSink | undefined;
}

/** The session call of a CallTool made in this process for an MCP session (only the endpoint sets it). */
export const SESSION_CALL = createContextKey<SessionCall | undefined>(undefined, {
  description: "the MCP session a tool call is made for",
});

/**
 * A JSON-RPC error to answer with, its words as they go on the wire: the SDK's McpError puts
 * "MCP error <code>: " in its message, which a client's SDK then prefixes again.
 */
export class JsonRpcRefusal extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "JsonRpcRefusal";
  }
}

/** The words of an error received over MCP, without the "MCP error <code>: " the SDK adds. */
export function wordsOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^(MCP error -?\d+: )+/, "");
}
