import type * as http from "node:http";
import type * as http2 from "node:http2";
import { writeHead } from "../http-response.ts";

/** What readiness is made of; each is "ok" or what is not. */
export interface ReadinessChecks {
  /** The search index holds every change (else searches wait for it to be built). */
  readonly index: "ok" | "building";
  readonly database: "ok" | "unreachable";
  /**
   * Writes can be made (a replica's shared database answers). Not part of readiness: a replica
   * without its database still serves reads; `/readyz/writes` answers for writes alone.
   */
  readonly writes: "ok" | "unavailable";
  /** Stopping: finishing in-flight calls, taking no new work. */
  readonly draining: "no" | "yes";
  /**
   * Hybrid search: "partial" while tools still wait for their vectors (they are ranked by their words
   * meanwhile). Not part of readiness: a server is useful before its last vector is computed.
   */
  readonly semantic: "off" | "ready" | "partial";
  /** Tools without a vector yet (0 unless `semantic` is "partial"). */
  readonly semanticPending: number;
}

export function isReady(checks: ReadinessChecks): boolean {
  return checks.index === "ok" && checks.database === "ok" && checks.draining === "no";
}

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/**
 * `GET /healthz` (live: the process answers) and `GET /readyz` (ready for traffic: 200, else 503 with
 * what is not) on the service port, for load balancers and Kubernetes probes that speak plain HTTP
 * (HTTP/1.1 or h2c). The gRPC health service answers the same for gRPC clients. Returns false for any
 * other path, which the RPC handler then serves.
 */
export function healthEndpoints(
  readiness: () => ReadinessChecks,
): (request: Request, response: Response) => boolean {
  return (request, response) => {
    const path = request.url?.split("?", 1)[0];
    if (path !== "/healthz" && path !== "/readyz" && path !== "/readyz/writes") return false;
    if (request.method !== "GET" && request.method !== "HEAD") {
      send(response, 405, { error: `${path} answers GET or HEAD` }, { allow: "GET, HEAD" });
      return true;
    }
    if (path === "/healthz") send(response, 200, { status: "ok" });
    else if (path === "/readyz/writes") {
      const { writes } = readiness();
      send(response, writes === "ok" ? 200 : 503, {
        status: writes === "ok" ? "ready" : "not_ready",
        writes,
      });
    } else {
      const checks = readiness();
      const { semanticPending, ...named } = checks;
      send(response, isReady(checks) ? 200 : 503, {
        status: isReady(checks) ? "ready" : "not_ready",
        checks: { ...named, semantic_pending: semanticPending },
      });
    }
    return true;
  };
}

function send(response: Response, status: number, body: object, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`;
  // Probes poll; nothing between them may cache an answer.
  writeHead(response, status, {
    "content-type": "application/json",
    "cache-control": "no-store",
    ...headers,
  });
  response.end(text);
}
