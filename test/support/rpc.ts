import * as http2 from "node:http2";
import { type Code, ConnectError } from "@connectrpc/connect";

/** The error a call fails with; fails the test if the call succeeds. */
export async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail, but it succeeded");
}

/** A gRPC message's envelope: a flag byte (1: compressed) and its 4-byte big-endian length, then it. */
export function envelope(flag: number, body: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt8(flag, 0);
  prefix.writeUInt32BE(body.byteLength, 1);
  return Buffer.concat([prefix, body]);
}

/**
 * Sends `chunks` (one write each) as a native gRPC request over raw HTTP/2 and reads the status from
 * the trailers (or a trailers-only answer's headers), so nothing a client library does is in the way.
 */
export function rawGrpcStatus(
  baseUrl: string,
  path: string,
  chunks: readonly Uint8Array[],
  headers: Record<string, string> = {},
): Promise<{ code: Code; message: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    let status: http2.IncomingHttpHeaders = {};
    stream.on("response", (head) => {
      status = head;
    });
    stream.on("trailers", (trailers) => {
      status = trailers;
    });
    stream.on("close", () => {
      session.close();
      resolve({
        code: Number(status["grpc-status"]),
        message: decodeURIComponent(String(status["grpc-message"] ?? "")),
      });
    });
    stream.on("error", reject);
    stream.resume();
    for (const chunk of chunks) stream.write(chunk);
    stream.end();
  });
}
