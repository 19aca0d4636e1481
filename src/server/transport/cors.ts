import type * as http from "node:http";
import type * as http2 from "node:http2";
import { cors } from "@connectrpc/connect";
import { isLoopback } from "../../auth/index.ts";
import type { CorsConfig } from "../../config/index.ts";
import { writeHead } from "../../http-response.ts";
import { MCP_PATH } from "../../mcp-endpoint/index.ts";
import { hostnameOf, requestHost } from "./request-host.ts";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/** Headers a page may send besides the protocols' own: credentials, the operator's role, trace context. */
const WAYFIND_REQUEST_HEADERS = ["authorization", "wayfind-role", "traceparent", "tracestate"];
/** Headers a page may read besides the protocols' own (errors, trailers). */
const WAYFIND_RESPONSE_HEADERS = ["wayfind-stale"];
/**
 * What a browser MCP client sends and reads on /mcp (Streamable HTTP of both revisions: a 2026-07-28
 * request names its method and target in headers), and the caller it names.
 */
const MCP_REQUEST_HEADERS = [
  "authorization",
  "content-type",
  "accept",
  "mcp-session-id",
  "mcp-protocol-version",
  "mcp-method",
  "mcp-name",
  "last-event-id",
  "wayfind-tenant",
  "wayfind-project",
  "wayfind-user",
  "traceparent",
  "tracestate",
];

const RPC_PREFLIGHT = {
  methods: cors.allowedMethods.join(", "),
  headers: [...cors.allowedHeaders, ...WAYFIND_REQUEST_HEADERS].join(", "),
  exposed: [...cors.exposedHeaders, ...WAYFIND_RESPONSE_HEADERS].join(", "),
};
const MCP_PREFLIGHT = {
  methods: "POST, GET, DELETE",
  headers: MCP_REQUEST_HEADERS.join(", "),
  exposed: "mcp-session-id",
};

/**
 * Which web pages may call the server, on every path of the service port (the API over Connect and
 * gRPC-Web, /mcp, the rest); applied by the request gate (request-gate.ts) after its Host rule:
 * - requests without an `Origin` (native clients, curl, and a browser's own same-origin GETs) pass;
 * - a page of the server itself may: its origin names the host the request was sent to, or, on a
 *   loopback server, a loopback name with the same port (`localhost:P` for `127.0.0.1:P`);
 * - a page of an origin in `server.cors.allowed_origins` may: preflights are answered and responses
 *   carry the headers that let the page read them, error details included;
 * - any other page is refused with 403 before the call runs. Browsers would hide the answer anyway,
 *   but a request a page can send without a preflight (a Connect GET) would still have run.
 */
export class BrowserAccess {
  private readonly origins: ReadonlySet<string>;
  private readonly anyOrigin: boolean;
  private readonly maxAge: string;
  private readonly loopback: boolean;

  constructor(config: CorsConfig, loopback: boolean) {
    this.origins = new Set(config.allowedOrigins);
    this.anyOrigin = this.origins.has("*");
    this.maxAge = String(config.maxAgeSeconds);
    this.loopback = loopback;
  }

  /** True when it answered the request (a preflight, or a refusal); else the request goes on. */
  handles(request: Request, response: Response): boolean {
    const origin = request.headers.origin;
    if (origin === undefined) return false;
    const refusal = this.refusal(origin, requestHost(request.headers));
    if (refusal !== undefined) {
      writeHead(response, 403, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
      response.end(`${refusal}\n`);
      return true;
    }
    const preflight = request.url?.split("?", 1)[0] === MCP_PATH ? MCP_PREFLIGHT : RPC_PREFLIGHT;
    response.setHeader("access-control-allow-origin", origin);
    response.setHeader("vary", "Origin");
    if (request.method !== "OPTIONS") {
      response.setHeader("access-control-expose-headers", preflight.exposed);
      return false;
    }
    writeHead(response, 204, {
      "access-control-allow-methods": preflight.methods,
      "access-control-allow-headers": preflight.headers,
      "access-control-max-age": this.maxAge,
    });
    response.end();
    return true;
  }

  /** Why a page of `origin` may not call a server reached as `host`, or undefined when it may. */
  refusal(origin: string, host: string): string | undefined {
    const page = originHost(origin);
    // "null" (sandboxed frames, file: pages) is no origin anyone can allow.
    if (page === undefined)
      return `pages without an origin (${origin.slice(0, 20)}) may not call this server`;
    if (this.anyOrigin || this.origins.has(origin) || this.isThisServer(page, host)) return undefined;
    return `pages of ${origin.slice(0, 100)} may not call this server; add the origin to server.cors.allowed_origins`;
  }

  /** Whether a page at `page` (an origin's URL) is served by this server, reached as `host`. */
  private isThisServer(page: URL, host: string): boolean {
    if (page.host === host.toLowerCase()) return true;
    if (!this.loopback || !isLoopback(hostnameOf(page.host)) || !isLoopback(hostnameOf(host))) return false;
    return (
      effectivePort(page.port, page.protocol) === effectivePort(host.split(":").at(-1) ?? "", page.protocol)
    );
  }
}

/** An origin as browsers send it, parsed; undefined for "null" and the like. */
function originHost(origin: string): URL | undefined {
  if (!URL.canParse(origin)) return undefined;
  const url = new URL(origin);
  return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
}

/** A port as written ("" = the scheme's default). */
function effectivePort(port: string, protocol: string): string {
  if (/^\d+$/.test(port)) return port;
  return protocol === "https:" ? "443" : "80";
}
