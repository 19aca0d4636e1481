import type * as http from "node:http";
import { Http2ServerResponse } from "node:http2";

/** A response of the one port, whichever protocol the request came in on. */
export type NodeResponse = http.ServerResponse | Http2ServerResponse;

/**
 * `response.writeHead` for either protocol. @types/node 22 types the two classes' overloads apart,
 * so a call on the union does not typecheck; each class is called with its own.
 */
export function writeHead(response: NodeResponse, status: number, headers?: http.OutgoingHttpHeaders): void {
  if (response instanceof Http2ServerResponse) response.writeHead(status, headers);
  else response.writeHead(status, headers);
}
