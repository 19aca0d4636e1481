// The worker thread that decodes large request messages, so a multi-megabyte RegisterTools body
// (tens to hundreds of milliseconds of protobuf decoding) never runs on the server's event loop.
// Protocol: each DecodeJob is answered by one DecodeOutcome with the same id.

import { parentPort } from "node:worker_threads";
import { fromBinary } from "@bufbuild/protobuf";
import { apiRegistry } from "./api-registry.ts";
import type { DecodeJob, DecodeOutcome } from "./request-decoder.ts";
import { errorReason } from "./rpc-errors.ts";

const port = parentPort;
if (port === null) throw new Error("decode-worker.ts runs only as a worker thread");

port.on("message", (job: DecodeJob) => {
  let outcome: DecodeOutcome;
  try {
    const schema = apiRegistry.getMessage(job.typeName);
    if (schema === undefined) throw new Error(`unknown message type ${job.typeName}`);
    outcome = { id: job.id, message: fromBinary(schema, job.bytes) };
  } catch (error) {
    outcome = { id: job.id, error: errorReason(error) };
  }
  port.postMessage(outcome);
});
