import { Worker } from "node:worker_threads";
import { type DescMessage, fromBinary, type Message, type MessageShape } from "@bufbuild/protobuf";
import { workerEntry } from "../worker-entry.ts";
import { apiRegistry } from "./api-registry.ts";
import { errorReason, malformedRequest } from "./rpc-errors.ts";

/**
 * Bodies from this size up are decoded in a worker thread. Protobuf-es decodes a RegisterTools body
 * of many schemas and examples at ~30 MB/s (2.9 MB: 75–265 ms on this machine); handing the decoded
 * message back is a structured clone, ~4 ms for the same body. Below it, decoding inline is cheaper
 * than the round trip.
 */
export const OFF_LOOP_DECODE_BYTES = 64 * 1024;

export interface DecodeJob {
  readonly id: number;
  readonly typeName: string;
  readonly bytes: Uint8Array;
}

export type DecodeOutcome =
  | { readonly id: number; readonly message: Message }
  | { readonly id: number; readonly error: string };

/**
 * Decodes request messages for the native gRPC transport: small ones inline, large ones of the wayfind
 * API in one worker thread (started on the first large body, restarted if it dies). A body that does
 * not decode is INVALID_ARGUMENT either way, with the same words.
 */
export class RequestDecoder {
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<
    number,
    { resolve: (message: Message) => void; reject: (e: unknown) => void }
  >();
  #closed = false;

  decode<Desc extends DescMessage>(
    input: Desc,
    bytes: Uint8Array,
  ): MessageShape<Desc> | Promise<MessageShape<Desc>> {
    if (
      bytes.length < OFF_LOOP_DECODE_BYTES ||
      this.#closed ||
      apiRegistry.getMessage(input.typeName) === undefined
    )
      return decodeInline(input, bytes);
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#pending.set(id, {
        // The worker decoded it with the schema named `input.typeName`: it is this shape.
        resolve: (message) => resolve(message as MessageShape<Desc>),
        reject: (error) => reject(typeof error === "string" ? malformedRequest(input, error) : error),
      });
      // A copy: the request's Buffer may be a view into a pooled allocation, which must not be moved.
      const copy = new Uint8Array(bytes);
      this.#ensureWorker().postMessage({ id, typeName: input.typeName, bytes: copy } satisfies DecodeJob, [
        copy.buffer,
      ]);
    });
  }

  /** Stops the worker; decodes still waiting fail, later ones run inline. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failPending(new Error("the server is shutting down"));
    await worker?.terminate();
  }

  #ensureWorker(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(workerEntry(import.meta.url, "decode-worker"));
    // Idle, it must not keep the process alive.
    worker.unref();
    worker.on("message", (outcome: DecodeOutcome) => {
      const job = this.#pending.get(outcome.id);
      this.#pending.delete(outcome.id);
      if ("error" in outcome) job?.reject(outcome.error);
      else job?.resolve(outcome.message);
    });
    const lost = (reason: unknown) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#failPending(
        reason instanceof Error ? reason : new Error(`decode worker exited (${String(reason)})`),
      );
    };
    worker.on("error", lost);
    worker.on("exit", lost);
    this.#worker = worker;
    return worker;
  }

  #failPending(error: Error): void {
    const jobs = [...this.#pending.values()];
    this.#pending.clear();
    for (const job of jobs) job.reject(error);
  }
}

function decodeInline<Desc extends DescMessage>(input: Desc, bytes: Uint8Array): MessageShape<Desc> {
  try {
    return fromBinary(input, bytes);
  } catch (error) {
    throw malformedRequest(input, errorReason(error));
  }
}
