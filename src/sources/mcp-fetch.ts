import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";

/**
 * `fetch` for the MCP SDK's Streamable-HTTP client transport, which passes one AbortSignal (its
 * connection's) to every request: undici adds an abort listener to that signal per request and drops
 * it only on abort or garbage collection, so a long-lived session gathered thousands of listeners
 * (a warning, memory, and a listener count walked on every request). Each request gets a signal of
 * its own instead, tied to the connection's until its response body is done.
 */
export const fetchWithOwnSignal: FetchLike = async (url, init) => {
  const shared = init?.signal;
  if (!shared) return fetch(url, init);
  const { signal, release } = ownSignal(shared);
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal });
  } catch (error) {
    release();
    throw error;
  }
  return releasedWithBody(response, release);
};

/**
 * A signal of one request's own, aborted with `shared` until `release`: the MCP SDK and undici add a
 * listener to the signal they are given and never remove it, which on a long-lived signal piles up.
 */
export function ownSignal(shared: AbortSignal): { readonly signal: AbortSignal; release(): void } {
  const own = new AbortController();
  const forward = () => own.abort(shared.reason);
  if (shared.aborted) forward();
  else shared.addEventListener("abort", forward, { once: true });
  return { signal: own.signal, release: () => shared.removeEventListener("abort", forward) };
}

/** The response, with `release` called once its body has been read to the end, failed or cancelled. */
function releasedWithBody(response: Response, release: () => void): Response {
  // Only an event stream outlives its request; any other body is read at once by the transport.
  if (response.body === null || !response.headers.get("content-type")?.includes("text/event-stream")) {
    release();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        release();
        controller.error(error);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
