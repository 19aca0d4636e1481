import type * as http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";

/** Bytes before each gRPC message: a flag byte (bit 0: compressed) and a 4-byte big-endian length. */
const PREFIX_BYTES = 5;

/** Whether a native gRPC request's messages may arrive uncompressed only (no grpc-encoding, or identity). */
export function declaresNoCompression(headers: http2.IncomingHttpHeaders): boolean {
  const encoding = headers["grpc-encoding"];
  return encoding === undefined || encoding === "identity";
}

/** The answer to a message marked compressed when the request declared no compression. */
export const COMPRESSED_WITHOUT_ENCODING = new ConnectError(
  "a message has the compressed flag set but the request has no grpc-encoding header: send grpc-encoding, or clear the flag",
  Code.Internal,
);

/**
 * Reads the prefix of every message of a native gRPC request as its bytes arrive (a few bytes per
 * message, whatever the chunking) and calls `refuse` once, before the message is delivered, if one
 * is marked compressed: grpc-js would read such a message as uncompressed, and the gRPC spec has the
 * call fail instead. Listens before grpc-js does, so call it before the stream is handed over.
 */
export function refuseCompressedMessages(stream: http2.ServerHttp2Stream, refuse: () => void): void {
  let prefixSeen = 0;
  let length = 0;
  let bodyLeft = 0;
  const read = (chunk: Buffer): void => {
    let at = 0;
    while (at < chunk.length) {
      if (bodyLeft > 0) {
        const skip = Math.min(bodyLeft, chunk.length - at);
        bodyLeft -= skip;
        at += skip;
        continue;
      }
      const byte = chunk[at++] as number;
      if (prefixSeen === 0) {
        if ((byte & 0x01) !== 0) {
          stream.off("data", read);
          refuse();
          return;
        }
        length = 0;
      } else length = length * 256 + byte;
      if (++prefixSeen === PREFIX_BYTES) {
        prefixSeen = 0;
        bodyLeft = length;
      }
    }
  };
  stream.on("data", read);
}
