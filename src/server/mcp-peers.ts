import { chmodSync, rmSync } from "node:fs";
import * as http from "node:http";
import type * as http2 from "node:http2";
import { writeHead } from "../http-response.ts";
import type { McpPeers } from "../mcp-endpoint/index.ts";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/** Where the workers of `serve --workers` reach each other's MCP sessions. */
export interface WorkerSockets {
  /** This process's worker number (1…N). */
  readonly worker: number;
  /**
   * The Unix socket worker `n` serves its MCP sessions on: in its data dir, so only the user running
   * wayfind can connect (a forwarded request carries the client certificate the first worker read).
   */
  readonly socketOf: (worker: number) => string;
}

/** Headers of one hop only, never passed on (HTTP/2 pseudo-headers are dropped as well). */
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "proxy-connection",
  "http2-settings",
  "te",
]);
function passedOn(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const kept: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined && !name.startsWith(":") && !HOP_HEADERS.has(name)) kept[name] = value;
  return kept;
}

/**
 * An MCP session lives in the worker that opened it (its transport, its streams): its id starts with
 * `w<n>.`, and a request of it reaching another worker (the primary hands out connections, not
 * sessions) is passed on to worker n over its Unix socket, answer and stream alike.
 */
export class McpWorkerPeers implements McpPeers {
  readonly sessionPrefix: string;
  private server: http.Server | undefined;

  constructor(private readonly sockets: WorkerSockets) {
    this.sessionPrefix = `w${sockets.worker}.`;
  }

  forward(sessionId: string, request: Request, response: Response, unreachable: () => void): boolean {
    const owner = Number(/^w(\d+)\./.exec(sessionId)?.[1] ?? Number.NaN);
    if (!Number.isInteger(owner) || owner === this.sockets.worker) return false;
    const upstream = http.request({
      socketPath: this.sockets.socketOf(owner),
      method: request.method,
      path: request.url,
      headers: passedOn(request.headers),
    });
    upstream.on("response", (answer) => {
      writeHead(response, answer.statusCode ?? 502, passedOn(answer.headers));
      // An event stream's headers go at once, not with its first event (HTTP/2 sends them on writeHead).
      if ("flushHeaders" in response) response.flushHeaders();
      answer.pipe(response);
    });
    // No such worker, or it restarted since: the session is gone with it.
    upstream.on("error", () => {
      if (!response.headersSent) unreachable();
      else response.end();
    });
    response.on("close", () => upstream.destroy());
    request.pipe(upstream);
    return true;
  }

  /** Serves this worker's sessions to the other workers (`handle`: the MCP endpoint). */
  async listen(
    handle: (request: http.IncomingMessage, response: http.ServerResponse) => boolean,
  ): Promise<void> {
    const path = this.sockets.socketOf(this.sockets.worker);
    // Left by this worker's previous process (it died): nothing listens on it any more.
    rmSync(path, { force: true });
    const server = http.createServer((request, response) => {
      if (handle(request, response)) return;
      response.writeHead(404).end();
    });
    // exclusive: this worker's own socket, not one the cluster's primary shares out.
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ path, exclusive: true }, () => resolve());
    });
    this.server = server;
    // Whatever the umask: another user connecting could claim any client certificate.
    chmodSync(path, 0o600);
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
