import { setTimeout as sleep } from "node:timers/promises";
import type { SemanticTier } from "../search/scores.ts";
import { EmbedderBusy, type QueryEmbedder } from "./embedder.ts";

/** A query embeds at most this many characters: the model reads 128 word pieces anyway. */
const QUERY_MAX_CHARS = 2_000;

/**
 * A search that delays no one (no other waits for the model, the server is not busy) is admitted when
 * its meaning is expected within this many times the wait, so a request is read the same way whenever
 * it is asked, rather than by the model one time and its static tier the next, on a machine busy
 * with other work too; and a search admitted waits up to this many times what it was admitted for,
 * when the machine slows down meanwhile.
 */
const GRACE = 2;

/** What read a request's texts, and their vectors. */
export interface RequestMeaning {
  readonly tier: SemanticTier;
  /**
   * The texts' vectors, in text order: every text's by the static tier, or by the model those it
   * embedded in time (without a static tier, texts not ready are left out).
   */
  readonly vectors: readonly Float32Array[];
  /** Texts ranked without meaning: the model was not in time and there is no static tier. */
  readonly late: number;
  /** Texts the model failed on (not a wait): the model is unavailable. */
  readonly failed: number;
  /** Texts the model did not read in time (whatever read them instead). */
  readonly modelLate: number;
}

/**
 * The meaning of a request's `texts`: by the model when they are cached, or when the model is expected
 * to embed them within `maxWaitMs` (GRACE times it when the search delays no one; then waited for, up
 * to GRACE times that allowance), counting only the
 * queries ahead of them — those whose words said as little or less (`wordsScore`, their best lexical
 * score: the model takes the queries that need it most first); else at once by the
 * model's static tier, while the model embeds them when it has time, so the same request is read by
 * the model next time. Without a static tier, a request the model misses is ranked by words and the
 * texts that were ready. A search never queues behind the model for longer, and never waits in vain.
 */
export async function requestMeaning(
  embedder: QueryEmbedder,
  texts: readonly string[],
  maxWaitMs: number,
  wordsScore?: number,
): Promise<RequestMeaning> {
  const clipped = texts.map((text) => text.slice(0, QUERY_MAX_CHARS));
  // Asked before: no promise, no timer.
  const cached = clipped.map((text) => embedder.cachedQuery(text));
  if (cached.every((vector) => vector !== undefined))
    return { tier: "model", vectors: cached, late: 0, failed: 0, modelLate: 0 };
  const missing = clipped.filter((_, i) => cached[i] === undefined);
  const outcomes: ("late" | "failed" | Float32Array)[] = cached.map((vector) => vector ?? "late");
  // The model's time goes first to the requests whose words say least: a request its words match well
  // loses little by the static tier (the fused score trusts the words more, the better they matched).
  const need = 1 - (wordsScore ?? 0);
  const limitMs = embedder.idle ? GRACE * maxWaitMs : maxWaitMs;
  if (maxWaitMs > 0 && embedder.expectedWaitMs(missing, need) <= limitMs) {
    const waitMs = GRACE * limitMs;
    const deadline = Date.now() + waitMs;
    const settled = Promise.all(
      clipped.map((text, i) =>
        cached[i] !== undefined
          ? undefined
          : embedder.embedQuery(text, deadline, need).then(
              (vector) => {
                outcomes[i] = vector;
              },
              (err: unknown) => {
                outcomes[i] = err instanceof EmbedderBusy ? "late" : "failed";
              },
            ),
      ),
    );
    const abort = new AbortController();
    await Promise.race([
      settled,
      sleep(waitMs, undefined, { signal: abort.signal, ref: false }).catch(() => {}),
    ]);
    abort.abort();
  } else for (const text of missing) embedder.embedLater(text);
  const byModel = outcomes.filter((o): o is Float32Array => o instanceof Float32Array);
  const failed = outcomes.filter((o) => o === "failed").length;
  const modelLate = clipped.length - byModel.length;
  if (modelLate === 0) return { tier: "model", vectors: byModel, late: 0, failed: 0, modelLate: 0 };
  const fast = embedder.staticTier;
  if (fast !== undefined)
    return { tier: "static", vectors: clipped.map((text) => fast.embed(text)), late: 0, failed, modelLate };
  const tier = byModel.length > 0 ? "model" : "none";
  return { tier, vectors: byModel, late: modelLate - failed, failed, modelLate };
}
