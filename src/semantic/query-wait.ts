import { setTimeout as sleep } from "node:timers/promises";
import { EmbedderBusy, type QueryEmbedder } from "./embedder.ts";

/** A query embeds at most this many characters: the model reads 128 word pieces anyway. */
const QUERY_MAX_CHARS = 2_000;

/** What became of a request's texts within the wait. */
export interface QueryVectors {
  /** The vectors ready in time, in text order (texts not ready are left out). */
  readonly vectors: readonly Float32Array[];
  /** Texts not embedded in time, or refused because too many queries wait: ranked by words only. */
  readonly late: number;
  /** Texts the model failed on (not a wait): the model is unavailable. */
  readonly failed: number;
}

/**
 * The vectors of `texts`, waiting at most `maxWaitMs` for those not cached (0: not at all), and not
 * at all when the query texts ahead of them would take longer: a search never queues behind the model
 * for longer, and does not wait in vain. A text not ready by then still completes in the
 * background, so the same request finds it cached next time.
 */
export async function queryVectors(
  embedder: QueryEmbedder,
  texts: readonly string[],
  maxWaitMs: number,
): Promise<QueryVectors> {
  const clipped = texts.map((text) => text.slice(0, QUERY_MAX_CHARS));
  // Asked before: no promise, no timer.
  const cached = clipped.map((text) => embedder.cachedQuery(text));
  if (cached.every((vector) => vector !== undefined)) return { vectors: cached, late: 0, failed: 0 };
  const queueMs = embedder.expectedWaitMs();
  const outcomes: ("late" | "failed" | Float32Array)[] = texts.map(() => "late");
  const settled = Promise.all(
    clipped.map((text, i) =>
      embedder.embedQuery(text, maxWaitMs).then(
        (vector) => {
          outcomes[i] = vector;
        },
        (err: unknown) => {
          outcomes[i] = err instanceof EmbedderBusy ? "late" : "failed";
        },
      ),
    ),
  );
  // No wait at all (asked for, or the texts ahead would take longer): what is cached now; the rest is
  // embedded for the next time.
  if (maxWaitMs > 0 && queueMs <= maxWaitMs) {
    const abort = new AbortController();
    await Promise.race([
      settled,
      sleep(maxWaitMs, undefined, { signal: abort.signal, ref: false }).catch(() => {}),
    ]);
    abort.abort();
  }
  const vectors = outcomes.filter((o): o is Float32Array => o instanceof Float32Array);
  return {
    vectors,
    late: outcomes.filter((o) => o === "late").length,
    failed: outcomes.filter((o) => o === "failed").length,
  };
}
