// The worker thread that owns the ONNX session, so inference never runs on the server's event loop.
// Protocol (worker-protocol.ts): workerData is the WorkerSettings; it posts one `ready` or `unusable`,
// then answers each `embed` with `vectors` (the buffer transferred, not copied), `failed` or, for
// `later` work it could not keep, `dropped`; a `stop` with `stopped` once the inference under way has
// returned.
import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { setImmediate as turn } from "node:timers/promises";
import { parentPort, workerData } from "node:worker_threads";
import { BatchQueue, type QueuedRequest, type Unit } from "./batches.ts";
import { SentenceModel } from "./model.ts";
import { Pace } from "./pace.ts";
import type { FromWorker, ToWorker, WorkerSettings } from "./worker-protocol.ts";

const port = parentPort;
if (port === null) throw new Error("embed-worker.ts runs only as a worker thread");
const post = (message: FromWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);
const settings = workerData as WorkerSettings;

/**
 * How much less CPU priority inference has than the server's event loop (nice levels): when both want
 * the cores, calls are answered first and meaning waits (a search waits for it only so long anyway).
 */
const INFERENCE_NICENESS = 5;

/**
 * Lowers this thread's priority; the session's threads, started next, inherit it. Linux gives each
 * thread its own nice value (its id is /proc/thread-self's last part); elsewhere nothing changes.
 */
function lowerPriority(): void {
  try {
    const thread = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(thread)) setPriority(thread, Math.min(19, getPriority(thread) + INFERENCE_NICENESS));
  } catch {
    // Not Linux, or not allowed: inference keeps the process's priority.
  }
}

lowerPriority();
try {
  const model = await SentenceModel.load(settings.modelDir, settings.threads);
  const pace = new Pace();
  // A first pace, from a request's inference once the session has run (loading ran a few).
  const probe = model.encode("list the open pull requests of a repository");
  const began = performance.now();
  await model.embedEncoded([probe], model.paddedLength(probe.ids.length));
  pace.observe(performance.now() - began, model.paddedLength(probe.ids.length));
  const queue = new BatchQueue(model);
  let running = false;
  let stopping = false;
  /** The server's event loop is busy: work no one waits for waits (ToWorker "eventLoop"). */
  let serverBusy = false;

  const answer = (request: QueuedRequest) =>
    post(
      {
        type: "vectors",
        requestId: request.requestId,
        vectors: request.vectors,
        msPerToken: pace.msPerToken,
      },
      [request.vectors.buffer as ArrayBuffer],
    );
  const run = async (unit: Unit) => {
    try {
      const began = performance.now();
      const vectors = await model.embedEncoded(
        unit.rows.map(({ request, row }) => request.encoded[row] ?? { ids: [] }),
        unit.length,
      );
      pace.observe(performance.now() - began, unit.rows.length * unit.length);
      for (const request of queue.complete(unit, vectors)) answer(request);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      for (const request of queue.fail(unit)) post({ type: "failed", requestId: request.requestId, message });
    }
  };
  // One inference at a time; between two, a turn of the loop lets new requests in, so queries that
  // arrived meanwhile go next, together.
  const drain = async () => {
    if (running) return;
    running = true;
    for (
      let unit = queue.next(Date.now(), serverBusy);
      unit !== undefined && !stopping;
      unit = queue.next(Date.now(), serverBusy)
    ) {
      await run(unit);
      await turn();
    }
    running = false;
    if (stopping) post({ type: "stopped" });
  };

  port.on("message", (message: ToWorker) => {
    if (message.type === "stop") {
      stopping = true;
      queue.clear();
      if (!running) post({ type: "stopped" });
      return;
    }
    if (stopping) return;
    if (message.type === "hurry") queue.hurry(message.requestId, message.deadline);
    else if (message.type === "eventLoop") serverBusy = message.busy;
    else {
      const { dropped } = queue.add(
        message.requestId,
        message.texts.map((text) => model.encode(text)),
        message.kind,
        message.deadline,
      );
      for (const request of dropped) post({ type: "dropped", requestId: request.requestId });
    }
    void drain();
  });
  post({
    type: "ready",
    modelId: model.id,
    sha256: model.sha256,
    dims: model.dims,
    batchable: model.batchable,
    calibration: model.calibration,
    msPerToken: pace.msPerToken,
  });
} catch (err) {
  post({ type: "unusable", message: err instanceof Error ? err.message : String(err) });
}
