// The worker thread that owns the ONNX session, so inference never runs on the server's event loop.
// It is handed word pieces, not texts: the main thread tokenizes (it does anyway, for the static tier
// and the pace), so the worker holds no second tokenizer.
// Protocol (worker-protocol.ts): workerData is the WorkerSettings; it posts one `ready` or `unusable`,
// then answers each `embed` with `vectors` (the buffer transferred, not copied), `failed` or, for
// `later` work it could not keep, `dropped`; a `stop` with `stopped` once the inference under way has
// returned.
import { readdirSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { setTimeout as sleep, setImmediate as turn } from "node:timers/promises";
import { parentPort, workerData } from "node:worker_threads";
import {
  BatchQueue,
  type LaterWork,
  type QueuedRequest,
  REST_WHILE_BUSY,
  SPARE_AFTER_MS,
  type Unit,
} from "./batches.ts";
import { SentenceModel } from "./model.ts";
import { Pace } from "./pace.ts";
import type { FromWorker, ToWorker, WorkerSettings } from "./worker-protocol.ts";

const port = parentPort;
if (port === null) throw new Error("embed-worker.ts runs only as a worker thread");
const post = (message: FromWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);
const settings = workerData as WorkerSettings;

/**
 * How much less CPU priority the inference pool's helper threads have than the server's event loop
 * (nice levels). This thread, which runs each inference and takes part in it, keeps the process's
 * priority, so a search's meaning is not starved by other programs on a busy machine; the helpers
 * yield to the event loop when both want a core, so calls are answered first.
 */
const HELPER_NICENESS = 5;

/** This process's threads (Linux: /proc/self/task), or none elsewhere. */
function threadIds(): Set<number> {
  try {
    return new Set(readdirSync("/proc/self/task").map(Number));
  } catch {
    return new Set();
  }
}

/** Lowers the priority of the threads that are not in `before` (the ones the session started). */
function lowerPriorityOfNew(before: ReadonlySet<number>): void {
  for (const thread of threadIds()) {
    if (before.has(thread)) continue;
    try {
      setPriority(thread, Math.min(19, getPriority(thread) + HELPER_NICENESS));
    } catch {
      // Gone meanwhile, or not allowed: it keeps the process's priority.
    }
  }
}

try {
  const before = threadIds();
  const model = await SentenceModel.load(settings.modelDir, settings.threads, settings.probes.batch);
  lowerPriorityOfNew(before);
  const pace = new Pace();
  // A first pace, from a request's inference once the session has run (loading ran a few).
  const probe = model.encode(settings.probes.pace);
  const began = performance.now();
  await model.embedEncoded([probe], model.paddedLength(probe.ids.length));
  pace.observe(performance.now() - began, model.paddedLength(probe.ids.length));
  const queue = new BatchQueue(model);
  let running = false;
  let stopping = false;
  /** The server's event loop is busy: the model rests after each inference (ToWorker "eventLoop"). */
  let serverBusy = false;
  /** When a search last asked for a text (Date.now): the model's spare time begins SPARE_AFTER_MS after. */
  let queryAt = 0;
  let spareTimer: NodeJS.Timeout | undefined;
  /** The model's spare time: no search has asked it for a text lately. */
  const spareTime = () => Date.now() - queryAt >= SPARE_AFTER_MS;
  /**
   * Which `later` work may go: none while searches keep coming; while the event loop is busy, the
   * requests asked again (one caller asking back to back keeps the loop busy, and its requests
   * would never be read by the model), not those asked once (a burst of requests never seen would
   * take CPU the calls need, likely for nothing); else all.
   */
  const laterWork = (): LaterWork => (!spareTime() ? "none" : serverBusy ? "askedAgain" : "all");

  const answer = (request: QueuedRequest) => {
    const vectors = request.vectors ?? new Float32Array(0);
    post({ type: "vectors", requestId: request.requestId, vectors, msPerToken: pace.msPerToken }, [
      vectors.buffer as ArrayBuffer,
    ]);
  };
  /** Runs one inference; returns how long it took (ms). */
  const run = async (unit: Unit): Promise<number> => {
    const began = performance.now();
    try {
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
    return performance.now() - began;
  };
  // One inference at a time; between two, a turn of the loop lets new requests in, so queries that
  // arrived meanwhile go next, together.
  const drain = async () => {
    if (running) return;
    running = true;
    for (
      let unit = queue.next(Date.now(), laterWork());
      unit !== undefined && !stopping;
      unit = queue.next(Date.now(), laterWork())
    ) {
      const took = await run(unit);
      // The calls the server answers need the cores too: rest as long as the inference took.
      if (serverBusy) await sleep(took * REST_WHILE_BUSY);
      else await turn();
    }
    running = false;
    if (stopping) post({ type: "stopped" });
    // Texts no one waits for wait for the model's spare time: look again when it begins.
    else if (queue.laterWaiting(serverBusy ? "askedAgain" : "all") && spareTimer === undefined)
      spareTimer = setTimeout(
        () => {
          spareTimer = undefined;
          void drain();
        },
        Math.max(1, queryAt + SPARE_AFTER_MS - Date.now()),
      );
  };

  port.on("message", (message: ToWorker) => {
    if (message.type === "stop") {
      stopping = true;
      clearTimeout(spareTimer);
      queue.clear();
      if (!running) post({ type: "stopped" });
      return;
    }
    if (stopping) return;
    if (message.type === "hurry") {
      queryAt = Date.now();
      queue.hurry(message.requestId, message.deadline, message.need);
    } else if (message.type === "again") queue.askedAgain(message.requestId);
    else if (message.type === "eventLoop") serverBusy = message.busy;
    else {
      if (message.kind === "query") queryAt = Date.now();
      const { dropped } = queue.add(
        message.requestId,
        message.pieces.map((pieces) => model.encode(pieces)),
        message.kind,
        message.deadline,
        message.need,
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
