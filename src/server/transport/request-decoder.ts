import { type DescMessage, fromBinary, type Message, type MessageShape } from "@bufbuild/protobuf";
import { errorReason } from "../../errors.ts";
import { JobWorker } from "../../worker-jobs.ts";
import { apiRegistry } from "./api-registry.ts";
import { malformedRequest, unknownEnumReason } from "./rpc-errors.ts";

/**
 * Bodies from this size up are decoded in a worker thread. Decoding a RegisterTools body of many
 * schemas and examples takes time in proportion to its size, all of it on the thread that decodes;
 * handing the decoded message back (a structured clone) costs a small part of that. Below this size,
 * decoding inline is cheaper than the round trip.
 */
export const OFF_LOOP_DECODE_BYTES = 64 * 1024;

export interface DecodeJob {
  readonly typeName: string;
  readonly bytes: Uint8Array;
  /** Protobuf binary (gRPC, Connect binary) or proto3 JSON (Connect JSON, unknown fields refused). */
  readonly format: "binary" | "json";
}

/**
 * Decodes request messages for the native gRPC transport: small ones inline, large ones of the wayfind
 * API in one worker thread (started on the first large body, restarted if it dies). A body that does
 * not decode is INVALID_ARGUMENT either way, with the same words.
 */
export class RequestDecoder {
  private readonly worker = new JobWorker<DecodeJob, Message>(import.meta.url, "decode-worker");

  /**
   * `bytes` as a message of `input`: inline when small (binary only), else in the worker. A body that
   * does not decode is INVALID_ARGUMENT naming the type and what is wrong.
   */
  decode<Desc extends DescMessage>(
    input: Desc,
    bytes: Uint8Array,
    format: DecodeJob["format"] = "binary",
  ): MessageShape<Desc> | Promise<MessageShape<Desc>> {
    if (
      format === "binary" &&
      (bytes.length < OFF_LOOP_DECODE_BYTES ||
        this.worker.closed ||
        apiRegistry.getMessage(input.typeName) === undefined)
    )
      return decodeInline(input, bytes);
    // A copy: the request's Buffer may be a view into a pooled allocation, which must not be moved.
    const copy = new Uint8Array(bytes);
    return this.worker.run({ typeName: input.typeName, bytes: copy, format }, [copy.buffer]).then(
      // The worker decoded it with the schema named `input.typeName`: it is this shape.
      (message) => message as MessageShape<Desc>,
      (error: unknown) => {
        if (typeof error !== "string") throw error;
        throw malformedRequest(input, format === "json" ? (unknownEnumReason(input, error) ?? error) : error);
      },
    );
  }

  /** Stops the worker; decodes still waiting fail, later ones run inline. */
  close(): Promise<void> {
    return this.worker.close();
  }
}

function decodeInline<Desc extends DescMessage>(input: Desc, bytes: Uint8Array): MessageShape<Desc> {
  try {
    return fromBinary(input, bytes);
  } catch (error) {
    throw malformedRequest(input, errorReason(error));
  }
}
