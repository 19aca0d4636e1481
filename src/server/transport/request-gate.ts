import type * as http from "node:http";
import type * as http2 from "node:http2";
import { isIP } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { CLIENT_CERTIFICATE_HEADER, isLoopback, ROLE_HEADER } from "../../auth/index.ts";
import type { CorsConfig } from "../../config/index.ts";
import { writeHead } from "../../http-response.ts";
import { dropUnreadBody, type RequestBodyDeadline } from "./connections.ts";
import { BrowserAccess } from "./cors.ts";
import { hostnameOf, requestHost } from "./request-host.ts";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/**
 * The error a call to `path` is refused with from its credentials alone, or undefined when they are
 * accepted, not needed (a public path) or cannot be judged without waiting (a new JWT). A promise
 * where the answer waits for a replica's read fence (an API key its copy may not hold yet).
 */
export type CredentialsCheck = (
  path: string,
  headers: Headers,
) => ConnectError | undefined | Promise<ConnectError | undefined>;

/** A refusal, or the promise of one (see CredentialsCheck). */
export type Refusal = ConnectError | Promise<ConnectError | undefined>;

/** What authentication reads of a request (src/auth): credentials and the development operator role. */
const CREDENTIAL_HEADERS = ["authorization", CLIENT_CERTIFICATE_HEADER, ROLE_HEADER];

/** Which names the server answers to (`server.allowed_hosts`), and why it must be strict about them. */
export interface HostRules {
  /** The server listens on a loopback address. */
  readonly loopback: boolean;
  /** Calls without credentials are served: whoever reaches the port acts as any tenant. */
  readonly servesUnauthenticated: boolean;
  /** Names (besides IP addresses and loopback names) the server may be reached by; lower-case. */
  readonly allowedHosts: readonly string[];
}

/**
 * What every request on the service port passes before anything reads its body, whatever its path
 * (the RPCs, /mcp, /console, /metrics, the probes) and protocol (Connect, gRPC-Web, native gRPC):
 *
 * 1. **Host** (DNS rebinding): a page whose site rebinds its own name to this server's address
 *    sends requests the browser holds for same-origin, GETs without an `Origin` among them, but
 *    always with its own name as Host. A server that trusts where a call comes from (it listens on
 *    loopback, or serves calls without credentials) answers only names that cannot be rebound: an
 *    IP address, a loopback name, or a name in `server.allowed_hosts`. Any other server answers any
 *    name, unless `server.allowed_hosts` lists them.
 * 2. **Origin** (cors.ts): a page of another origin is refused unless `server.cors` allows it.
 * 3. **Body deadline** (connections.ts): the whole body within `server.request_body_timeout_seconds`
 *    of the headers, so a client that stops sending cannot hold the request and its buffers.
 * 4. **Credentials before the body**: an RPC whose credentials are refused from its headers alone is
 *    answered so in its own protocol without its body being read (/mcp checks its own first).
 */
export class RequestGate {
  private readonly hosts: HostRules;
  private readonly browsers: BrowserAccess;
  private readonly bodyDeadline: RequestBodyDeadline;
  private readonly credentials: CredentialsCheck | undefined;
  /** Requests refused for their credentials (or being judged), to be answered without reading their bodies. */
  private readonly refused = new WeakMap<Request, Refusal>();

  constructor(
    hosts: HostRules,
    cors: CorsConfig,
    bodyDeadline: RequestBodyDeadline,
    credentials?: CredentialsCheck,
  ) {
    this.hosts = hosts;
    this.browsers = new BrowserAccess(cors, hosts.loopback);
    this.bodyDeadline = bodyDeadline;
    this.credentials = credentials;
  }

  /**
   * Why the RPC of `request` is refused before its body is read (refusedFor), or undefined; a promise
   * while its credentials wait for a replica's fence (the body is read only once it resolves to none).
   */
  refusedUnread(request: Request): Refusal | undefined {
    return this.refused.get(request);
  }

  /**
   * An HTTP/1.1 request, or an HTTP/2 one other than native gRPC: true when the gate answered it
   * (refused, or a CORS preflight); otherwise its body is bounded and it goes on.
   */
  handles(request: Request, response: Response): boolean {
    const refusal = this.hostRefusal(requestHost(request.headers));
    if (refusal !== undefined) {
      writeHead(response, 403, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
      response.end(`${refusal}\n`);
      return true;
    }
    if (this.browsers.handles(request, response)) return true;
    this.bodyDeadline.bound(request, response);
    const credentials =
      request.method === "POST" ? this.refusedFor(request.url ?? "", request.headers) : undefined;
    if (credentials !== undefined) {
      this.refused.set(request, credentials);
      const dropRefusedBody = () => {
        if ("stream" in request) dropUnreadBody(request.stream);
      };
      if (credentials instanceof Promise) credentials.then((refusal) => refusal && dropRefusedBody());
      else dropRefusedBody();
    }
    return false;
  }

  /**
   * A native gRPC stream (a proxy may pass one on from a browser's gRPC-Web call, Origin and all):
   * false, once answered with `respond`, when refused; otherwise its body is bounded. A promise of
   * that while its credentials wait for a replica's fence (its body waits unread meanwhile).
   */
  admitsGrpcStream(
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    respond: (error: ConnectError) => void,
  ): boolean | Promise<boolean> {
    const host = requestHost(headers);
    const origin = headers.origin;
    const refusal =
      this.hostRefusal(host) ?? (origin === undefined ? undefined : this.browsers.refusal(origin, host));
    const refused =
      refusal === undefined
        ? this.refusedFor(headers[":path"] ?? "", headers)
        : new ConnectError(refusal, Code.PermissionDenied);
    const admit = (refused: ConnectError | undefined) => {
      if (refused === undefined) return true;
      dropUnreadBody(stream);
      respond(refused);
      return false;
    };
    const bound = () => this.bodyDeadline.boundGrpcStream(stream, headers[":path"] ?? "", respond);
    if (refused instanceof Promise) {
      bound();
      return refused.then(admit);
    }
    const admitted = admit(refused);
    if (admitted) bound();
    return admitted;
  }

  /**
   * A call whose credentials are refused from its headers alone (none where the server needs them,
   * an unknown, revoked or expired key): its body is never read or buffered. What needs more (a
   * JWT not verified before) is left to the call's own authentication.
   */
  private refusedFor(
    url: string,
    headers: http.IncomingHttpHeaders | http2.IncomingHttpHeaders,
  ): ConnectError | Promise<ConnectError | undefined> | undefined {
    if (this.credentials === undefined) return undefined;
    const fetchHeaders = new Headers();
    for (const name of CREDENTIAL_HEADERS) {
      const value = headers[name];
      if (typeof value === "string") fetchHeaders.set(name, value);
    }
    return this.credentials(url.split("?", 1)[0] ?? "", fetchHeaders);
  }

  /** Why a request sent to `host` is refused, or undefined. */
  private hostRefusal(host: string): string | undefined {
    const name = hostnameOf(host);
    const { allowedHosts } = this.hosts;
    if (name !== "" && (isIP(name) !== 0 || isLoopback(name) || allowedHosts.includes(name)))
      return undefined;
    const strict = this.hosts.loopback || this.hosts.servesUnauthenticated || allowedHosts.length > 0;
    // A request that names no host (an empty Host, HTTP/1.0 or HTTP/2 without one) proves nothing
    // about the name it was sent to: a strict server refuses it as it refuses a rebound name.
    if (!strict && (name !== "" || host === "")) return undefined;
    const why = this.hosts.loopback
      ? "this server listens on loopback only"
      : this.hosts.servesUnauthenticated
        ? "this server serves calls without credentials"
        : "it is not one of server.allowed_hosts";
    const refused =
      host === ""
        ? "A request without a Host header is refused"
        : `Host "${host.slice(0, 100)}" does not name this server`;
    return `${refused}: ${why}, so it answers only an IP address, localhost or a name in server.allowed_hosts (DNS rebinding protection)`;
  }
}
