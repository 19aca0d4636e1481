/**
 * What an MCP server asks the client while wayfind stands between them (docs/mcp.md "Through
 * wayfind"): `sampling/createMessage`, `elicitation/create`, `roots/list`. One connection to a server
 * serves one owner (mcp-sources.ts): a session that declared what it answers, whose client every
 * request on the connection goes to, or a tenant's calls that no client can answer (gRPC CallTool,
 * sessions that declared nothing), where every request is refused with a JSON-RPC error the server
 * reads. Nothing a server sends can name another session: where a request goes is decided by the
 * connection it arrived on.
 *
 * Bounds: a request larger than the largest message is refused; one the client does not answer within
 * the server's `call_timeout_seconds` is cancelled toward the client and refused upstream (-32001);
 * one asked while calls were in flight is cancelled once they have all ended; how many a session may
 * have waiting is the session's business (src/mcp-endpoint/session-client.ts).
 */
import { ErrorCode, type JSONRPCRequest, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig } from "../config/index.ts";
import type { JsonObject } from "../json.ts";
import { CLIENT_METHODS, JsonRpcRefusal, type SessionClient } from "../tools/mcp-session.ts";

interface Asked {
  /** The session's requests in flight on the connection when it was asked; empty = none. */
  readonly during: Set<RequestId>;
  readonly ended: AbortController;
}

export class ClientAsks {
  /** The session's requests in flight on this connection, oldest first. */
  private readonly inFlight = new Set<RequestId>();
  private readonly asked = new Set<Asked>();

  constructor(
    private readonly config: McpServerConfig,
    /** The session the connection serves; undefined = a tenant's calls, which no client answers. */
    private readonly client: SessionClient | undefined,
    private readonly maxBytes: number,
  ) {}

  /** The session's oldest request in flight here: its stream is where what the server sends goes. */
  get related(): RequestId | undefined {
    for (const id of this.inFlight) return id;
    return undefined;
  }

  /** Marks a request of the session in flight; the returned function marks it ended. */
  begin(requestId: RequestId | undefined): () => void {
    if (requestId === undefined) return () => {};
    this.inFlight.add(requestId);
    return () => {
      this.inFlight.delete(requestId);
      for (const asked of this.asked) {
        if (!asked.during.delete(requestId) || asked.during.size > 0) continue;
        asked.ended.abort(
          new JsonRpcRefusal(
            ErrorCode.InvalidRequest,
            "the call this request came with has ended; wayfind stopped waiting for the client's answer",
          ),
        );
      }
    };
  }

  /** The capabilities the connection declares: what the session's client declared it answers. */
  capabilities(): JsonObject {
    const answers = this.client?.answers ?? {};
    return Object.fromEntries(Object.entries(answers).filter(([, declared]) => declared !== undefined));
  }

  /** Answers a request of the server: the client's answer, or a JsonRpcRefusal the server reads. */
  async answer(request: JSONRPCRequest, signal: AbortSignal): Promise<JsonObject> {
    const capability = CLIENT_METHODS[request.method];
    if (capability === undefined)
      throw new JsonRpcRefusal(
        ErrorCode.MethodNotFound,
        `wayfind does not pass ${request.method} on to clients`,
      );
    const client = this.client;
    if (client === undefined || client.answers[capability] === undefined)
      throw new JsonRpcRefusal(
        ErrorCode.MethodNotFound,
        `there is no client to answer ${request.method} through wayfind: this connection serves calls ` +
          `whose caller did not declare ${capability} (a gRPC CallTool, or an MCP session without it)`,
      );
    const params = (request.params ?? undefined) as JsonObject | undefined;
    const bytes = params === undefined ? 0 : Buffer.byteLength(JSON.stringify(params));
    if (bytes > this.maxBytes)
      throw new JsonRpcRefusal(
        ErrorCode.InvalidRequest,
        `${request.method} is ${bytes} bytes of JSON, more than the ${this.maxBytes} wayfind passes on`,
      );
    const asked: Asked = { during: new Set(this.inFlight), ended: new AbortController() };
    this.asked.add(asked);
    const timeoutMs = this.config.callTimeoutSeconds * 1000;
    try {
      return await client.ask(
        { method: request.method, ...(params === undefined ? {} : { params }) },
        {
          related: this.related,
          signal: AbortSignal.any([signal, asked.ended.signal]),
          timeoutMs,
        },
      );
    } catch (error) {
      if (asked.ended.signal.aborted) throw asked.ended.signal.reason;
      if (error instanceof JsonRpcRefusal && error.code === ErrorCode.RequestTimeout)
        throw new JsonRpcRefusal(
          ErrorCode.RequestTimeout,
          `the client did not answer ${request.method} within ${timeoutMs} ms ` +
            `(mcp_servers[].call_timeout_seconds of "${this.config.name}")`,
        );
      throw error;
    } finally {
      this.asked.delete(asked);
    }
  }
}
