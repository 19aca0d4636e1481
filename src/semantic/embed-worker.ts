// The worker thread that owns the ONNX session, so inference never runs on the server's event loop.
// Protocol: workerData is the model folder; it posts one WorkerReady or WorkerFailed, then answers
// each EmbedRequest with an EmbedResponse whose vectors' buffer is transferred, not copied.
import { parentPort, workerData } from "node:worker_threads";
import { SentenceModel } from "./model.ts";
import type { EmbedRequest, EmbedResponse, WorkerMessage } from "./worker-protocol.ts";

const port = parentPort;
if (port === null) throw new Error("embed-worker.ts runs only as a worker thread");
const post = (message: WorkerMessage, transfer: ArrayBuffer[] = []): void =>
  port.postMessage(message, transfer);

try {
  const model = await SentenceModel.load(String(workerData));
  post({ type: "ready", modelId: model.id, dims: model.dims });
  port.on("message", async (request: EmbedRequest) => {
    let response: EmbedResponse;
    try {
      const vectors = await model.embed(request.texts);
      response = { type: "vectors", requestId: request.requestId, vectors };
    } catch (err) {
      response = {
        type: "failed",
        requestId: request.requestId,
        message: err instanceof Error ? err.message : String(err),
      };
    }
    post(response, response.type === "vectors" ? [response.vectors.buffer as ArrayBuffer] : []);
  });
} catch (err) {
  post({ type: "unusable", message: err instanceof Error ? err.message : String(err) });
}
