import type * as http from "node:http";
import type * as http2 from "node:http2";
import { cors } from "@connectrpc/connect";
import { reboundHostRefusal, requestHost } from "../auth/index.ts";
import type { CorsConfig } from "../config/index.ts";
import { writeHead } from "../http-response.ts";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/** Headers a page may send besides the protocols' own: credentials, the operator's role, trace context. */
const WAYFIND_REQUEST_HEADERS = ["authorization", "wayfind-role", "traceparent", "tracestate"];
/** Headers a page may read besides the protocols' own (errors, trailers). */
const WAYFIND_RESPONSE_HEADERS = ["wayfind-stale"];

const ALLOWED_METHODS = cors.allowedMethods.join(", ");
const ALLOWED_HEADERS = [...cors.allowedHeaders, ...WAYFIND_REQUEST_HEADERS].join(", ");
const EXPOSED_HEADERS = [...cors.exposedHeaders, ...WAYFIND_RESPONSE_HEADERS].join(", ");

/**
 * Which web pages may call the API (Connect and gRPC-Web), on every path of the service port:
 * - requests without an `Origin` (native clients, curl) pass untouched;
 * - a page of the server's own origin (the console) always may;
 * - a page of an origin in `server.cors.allowed_origins` may: preflights are answered and responses
 *   carry the headers that let the page read them, error details included;
 * - any other page is refused with 403 before the call runs. Browsers would hide the answer anyway,
 *   but a request a page can send without a preflight (a Connect GET) would still have run.
 * On a loopback server a page must also reach it by a loopback name, so a site that rebinds its
 * own name to 127.0.0.1 cannot use a server that trusts loopback callers.
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
    const preflight = request.method === "OPTIONS";
    if (refusal !== undefined) {
      writeHead(response, 403, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
      response.end(`${refusal}\n`);
      return true;
    }
    response.setHeader("access-control-allow-origin", origin);
    response.setHeader("vary", "Origin");
    if (!preflight) {
      response.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
      return false;
    }
    writeHead(response, 204, {
      "access-control-allow-methods": ALLOWED_METHODS,
      "access-control-allow-headers": ALLOWED_HEADERS,
      "access-control-max-age": this.maxAge,
    });
    response.end();
    return true;
  }

  /** Why a page of `origin` may not call a server reached as `host`, or undefined when it may. */
  private refusal(origin: string, host: string): string | undefined {
    const page = originHost(origin);
    const rebound = this.loopback ? reboundHostRefusal(host) : undefined;
    if (rebound !== undefined) return rebound;
    // "null" (sandboxed frames, file: pages) is no origin anyone can allow.
    if (page === undefined)
      return `pages without an origin (${origin.slice(0, 20)}) may not call this server`;
    if (page === host.toLowerCase()) return undefined;
    if (this.anyOrigin || this.origins.has(origin)) return undefined;
    return `pages of ${origin.slice(0, 100)} may not call this server; add the origin to server.cors.allowed_origins`;
  }
}

/** `host[:port]` of an origin as browsers send it; undefined for "null" and the like. */
function originHost(origin: string): string | undefined {
  if (!URL.canParse(origin)) return undefined;
  return new URL(origin).host;
}
