// The worker thread that decodes large request messages, so a multi-megabyte RegisterTools body
// (tens to hundreds of milliseconds of protobuf decoding) never runs on the server's event loop.

import { fromBinary, fromJson, type JsonValue, type Message } from "@bufbuild/protobuf";
import { errorReason } from "../../errors.ts";
import { serveJobs } from "../../worker-jobs.ts";
import { apiRegistry } from "./api-registry.ts";
import type { DecodeJob } from "./request-decoder.ts";

serveJobs<DecodeJob, Message>((job) => {
  const schema = apiRegistry.getMessage(job.typeName);
  if (schema === undefined) throw new Error(`unknown message type ${job.typeName}`);
  if (job.format === "binary") return fromBinary(schema, job.bytes);
  const json = JSON.parse(new TextDecoder().decode(job.bytes)) as JsonValue;
  return fromJson(schema, json, { ignoreUnknownFields: false, registry: apiRegistry });
}, errorReason);
