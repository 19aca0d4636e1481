/**
 * The 2026-07-28 leg of `/mcp` (docs/mcp.md "Two eras on one endpoint"): a request that carries its protocol revision
 * and client capabilities in its own `_meta` is answered on its own, by a server made for it
 * (request-server.ts), with no session — so any process or replica serving the port answers it (a
 * call held over rounds excepted: rounds.ts). The SDK's handler checks the revision, the `Mcp-Method`
 * / `Mcp-Name` headers and the envelope, answers `server/discover` and `subscriptions/listen`, and
 * refuses the methods the revision removed.
 */
import { once } from "node:events";
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import {
  createMcpHandler,
  isJsonContentType,
  isLegacyRequest,
  type McpHttpHandler,
} from "@modelcontextprotocol/server";
import type { Logger } from "pino";
import { type NodeResponse, writeHead } from "../http-response.ts";
import type { McpGateway } from "../sources/mcp-gateway.ts";
import type { WayfindClients } from "./meta-tools.ts";
import { type RequestCaller, requestServer } from "./request-server.ts";
import { DEFAULT_ROUND_LIMITS, Rounds } from "./rounds.ts";

type NodeRequest = IncomingMessage | Http2ServerRequest;

/** Where who a request acts as travels through the SDK's handler to its server's factory. */
const OPTIONS_KEY = "wayfind.request";

export class StatelessRequests {
  private readonly handler: McpHttpHandler;
  private readonly rounds: Rounds;

  constructor(options: {
    readonly clients: WayfindClients;
    readonly gateway: McpGateway | undefined;
    readonly version: string;
    readonly logger: Logger;
  }) {
    const { clients, gateway, version, logger } = options;
    const rounds = new Rounds(
      DEFAULT_ROUND_LIMITS,
      (clientId) => gateway?.sessionEnded(clientId) ?? Promise.resolve(),
    );
    this.rounds = rounds;
    this.handler = createMcpHandler(
      (context) =>
        requestServer({
          clients,
          gateway,
          version,
          rounds,
          ...(context.authInfo?.extra?.[OPTIONS_KEY] as RequestCaller),
        }),
      {
        // 2025-11-25 clients keep their sessions (endpoint.ts): this handler sees only 2026 requests.
        legacy: "reject",
        onerror: (error) => logger.debug({ err: error }, "mcp 2026-07-28 request refused or failed"),
      },
    );
  }

  /**
   * Whether a request without a session is of the 2026-07-28 revision (or claims to be: the modern
   * leg answers what is wrong with it); `body` is its parsed body (undefined for GET and DELETE).
   */
  async isModern(request: NodeRequest, body: unknown): Promise<boolean> {
    return !(await isLegacyRequest(webRequest(request, new AbortController().signal), body));
  }

  /** Answers one 2026-07-28 request, its body already read, acting as `caller`. */
  async serve(
    request: NodeRequest,
    response: NodeResponse,
    body: unknown,
    caller: RequestCaller,
  ): Promise<void> {
    if (request.method === "POST" && !isJsonContentType(header(request, "content-type")))
      return unsupportedMedia(response);
    // A client that goes away ends its request: a call it was waiting for, a listen stream.
    const gone = new AbortController();
    response.once("close", () => gone.abort());
    const answer = await this.handler.fetch(webRequest(request, gone.signal), {
      parsedBody: body,
      authInfo: { token: "", clientId: caller.caller.tenantId, scopes: [], extra: { [OPTIONS_KEY]: caller } },
    });
    writeHead(response, answer.status, Object.fromEntries(answer.headers));
    if (answer.body === null) {
      response.end();
      return;
    }
    const reader = answer.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done || gone.signal.aborted) break;
        if (!(response as NodeJS.WritableStream).write(value))
          await Promise.race([once(response, "drain"), once(response, "close")]);
      }
    } finally {
      await reader.cancel().catch(() => undefined);
      response.end();
    }
  }

  close(): Promise<void> {
    this.rounds.close();
    return this.handler.close();
  }
}

/**
 * The request as a Fetch request without its body: the SDK's handler is given the body already
 * parsed (`parsedBody`), and reads only the method, URL, headers and signal.
 */
function webRequest(request: NodeRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    // HTTP/2's pseudo-headers (:method, :path, …) are not headers a Fetch request may hold.
    if (name.startsWith(":") || value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  return new Request(`http://localhost${request.url ?? "/"}`, {
    method: request.method ?? "GET",
    headers,
    signal,
  });
}

function header(request: NodeRequest, name: string): string | null {
  const value = request.headers[name];
  return typeof value === "string" ? value : null;
}

function unsupportedMedia(response: NodeResponse): void {
  writeHead(response, 415, { "content-type": "application/json" });
  response.end(
    JSON.stringify({
      jsonrpc: "2.0",
      error: { code: -32600, message: "send the request as Content-Type: application/json" },
      id: null,
    }),
  );
}
