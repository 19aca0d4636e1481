/**
 * `wayfind mcp`: an MCP server on stdin/stdout for clients that launch a command (Claude Desktop,
 * Cursor, VS Code, …), passing every message to a running wayfind's `/mcp` endpoint with the given
 * credentials. A session the server no longer knows (it restarted, or closed an idle one) is opened
 * again with the client's own `initialize`, so the client never notices.
 */
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  type InitializeResult,
  isInitializeRequest,
  isJSONRPCRequest,
  type JSONRPCMessage,
} from "@modelcontextprotocol/sdk/types.js";
import type { McpToolList } from "../config/index.ts";
import { fetchWithOwnSignal } from "../sources/mcp-fetch.ts";

export interface BridgeOptions {
  /** The server's base URL (`http://127.0.0.1:50051`); `/mcp` is added. */
  readonly url: string;
  /** An API key or token; undefined = none (a loopback server that allows it). */
  readonly apiKey: string | undefined;
  /**
   * Why the credential cannot be sent (its shape, checked before any call): every request is then
   * answered with this, so the client shows what to fix instead of a failure deep in HTTP.
   */
  readonly refusal?: string | undefined;
  /** The tenant to act for without credentials (development); a credential's own tenant otherwise. */
  readonly tenant: string | undefined;
  /** The tool list the session asks for (`/mcp?tool_list=`); undefined = the server's. */
  readonly toolList: McpToolList | undefined;
  readonly log: (line: string) => void;
}

/** Runs the bridge until stdin ends; resolves with the exit code. */
export async function runMcpBridge(options: BridgeOptions): Promise<number> {
  if (options.refusal !== undefined) return refuseEveryRequest(options.refusal, options.log);
  const endpoint = new URL("/mcp", options.url.endsWith("/") ? options.url : `${options.url}/`);
  if (options.toolList) endpoint.searchParams.set("tool_list", options.toolList);
  const headers: Record<string, string> = {
    ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    ...(options.tenant ? { "wayfind-tenant": options.tenant } : {}),
  };
  const stdio = new StdioServerTransport();
  let initialize: JSONRPCMessage | undefined;
  let initialized = false;
  let upstream: StreamableHTTPClientTransport;

  const reply = (message: JSONRPCMessage) =>
    stdio.send(message).catch((error: unknown) => options.log(`cannot write to stdout: ${String(error)}`));
  const open = async (): Promise<StreamableHTTPClientTransport> => {
    const transport = new StreamableHTTPClientTransport(endpoint, {
      requestInit: { headers },
      fetch: fetchWithOwnSignal,
    });
    transport.onmessage = (message) => {
      // The client's initialize answered: later requests carry the protocol version it agreed.
      const version = agreedVersion(message);
      if (version && initialize && "id" in initialize && "id" in message && message.id === initialize.id)
        transport.setProtocolVersion(version);
      void reply(message);
    };
    transport.onerror = (error) => options.log(`wayfind at ${endpoint}: ${error.message}`);
    await transport.start();
    return transport;
  };
  /** A new session, set up as the client set up the last one (its answers are not passed on). */
  const reopen = async () => {
    upstream = await open();
    if (!initialize) return;
    const answered = new Promise<void>((resolve) => {
      const forward = upstream.onmessage;
      upstream.onmessage = (message) => {
        upstream.onmessage = forward;
        const version = agreedVersion(message);
        if (version) upstream.setProtocolVersion(version);
        resolve();
      };
    });
    await upstream.send(initialize);
    await answered;
    if (initialized) await upstream.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  };
  const pass = async (message: JSONRPCMessage) => {
    if (isInitializeRequest(message)) initialize = message;
    if ("method" in message && message.method === "notifications/initialized") initialized = true;
    try {
      await upstream.send(message);
    } catch (error) {
      if (error instanceof StreamableHTTPError && error.code === 404 && !isInitializeRequest(message)) {
        options.log("wayfind no longer knows the session; opening a new one");
        try {
          await reopen();
          await upstream.send(message);
          return;
        } catch (again) {
          return fail(message, again);
        }
      }
      fail(message, error);
    }
  };
  const fail = (message: JSONRPCMessage, error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    options.log(`wayfind at ${endpoint} did not take a message: ${reason}`);
    // A request must be answered, or the client waits for good.
    if (isJSONRPCRequest(message))
      void reply({
        jsonrpc: "2.0",
        id: message.id,
        error: { code: -32000, message: failureText(endpoint.origin, error, reason) },
      });
  };

  upstream = await open();
  // One message at a time, in order: a request may not overtake the initialize before it.
  let queue = Promise.resolve();
  stdio.onmessage = (message) => {
    queue = queue.then(() => pass(message));
  };
  const ended = new Promise<void>((resolve) => {
    stdio.onclose = () => resolve();
    process.stdin.once("end", () => resolve());
  });
  await stdio.start();
  await ended;
  await queue;
  await upstream.terminateSession().catch(() => undefined);
  await upstream.close();
  return 0;
}

/** The protocol version an answer to `initialize` agreed; undefined for any other message. */
function agreedVersion(message: JSONRPCMessage): string | undefined {
  return (message as { result?: Partial<InitializeResult> }).result?.protocolVersion;
}

/**
 * What a client is told when wayfind did not take a message: a server that answered says why (a
 * key it does not accept is not an unreachable server); one that did not answer is unreachable.
 */
function failureText(origin: string, error: unknown, reason: string): string {
  if (!(error instanceof StreamableHTTPError) || error.code === undefined)
    return `wayfind at ${origin} cannot be reached: ${reason}; is \`wayfind serve\` running there?`;
  const next =
    error.code === 401
      ? "; check the API key (--api-key or WAYFIND_API_KEY): wayfind keys create prints a new one"
      : error.code === 403
        ? "; the key's roles or tenant do not allow this: it needs the agent role"
        : "";
  return `wayfind at ${origin} refused the message (HTTP ${error.code}): ${reason}${next}`;
}

/** A bridge that sends nothing: it answers every request with `refusal` until stdin ends. */
async function refuseEveryRequest(refusal: string, log: (line: string) => void): Promise<number> {
  log(refusal);
  const stdio = new StdioServerTransport();
  stdio.onmessage = (message) => {
    if (isJSONRPCRequest(message))
      void stdio
        .send({ jsonrpc: "2.0", id: message.id, error: { code: -32000, message: refusal } })
        .catch(() => undefined);
  };
  const ended = new Promise<void>((resolve) => {
    stdio.onclose = () => resolve();
    process.stdin.once("end", () => resolve());
  });
  await stdio.start();
  await ended;
  return 0;
}
