import { useEffect, useState } from "preact/hooks";
import { problemOf } from "./api.ts";

export interface Answer<T> {
  readonly value: T | undefined;
  readonly problem: string | undefined;
  readonly loading: boolean;
}

/** The answer of one call, made again whenever `deps` change; an older answer never overwrites a newer. */
export function useCall<T>(call: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Answer<T> {
  const [answer, setAnswer] = useState<Answer<T>>({ value: undefined, problem: undefined, loading: true });
  useEffect(() => {
    const abort = new AbortController();
    setAnswer((previous) => ({ ...previous, loading: true }));
    call(abort.signal).then(
      (value) => !abort.signal.aborted && setAnswer({ value, problem: undefined, loading: false }),
      (error: unknown) =>
        !abort.signal.aborted && setAnswer({ value: undefined, problem: problemOf(error), loading: false }),
    );
    return () => abort.abort();
  }, deps);
  return answer;
}

export interface StreamState {
  readonly status: "connecting" | "live" | "paused" | "reconnecting";
  /** Why the stream is reconnecting. */
  readonly problem: string | undefined;
}

/** The id of the last event a stream delivered (0n: none yet); the stream moves it on. */
export interface Cursor {
  value: bigint;
}

/**
 * Follows a server stream while `running`: `open(cursor, signal)` reads it, moving `cursor` past
 * each event. When the stream fails (a server that went away), it waits and opens it again from
 * that cursor, so nothing is missed or repeated. Pausing and resuming also go on from the cursor.
 */
export function useResumingStream(
  open: (cursor: Cursor, signal: AbortSignal, live: () => void) => Promise<void>,
  deps: readonly unknown[],
  running = true,
): StreamState {
  const [state, setState] = useState<StreamState>({
    status: running ? "connecting" : "paused",
    problem: undefined,
  });
  const [cursor] = useState<Cursor>({ value: 0n });
  useEffect(() => {
    if (!running) {
      setState({ status: "paused", problem: undefined });
      return;
    }
    const abort = new AbortController();
    void (async () => {
      for (let attempt = 0; !abort.signal.aborted; attempt++) {
        try {
          let answered = false;
          // Live once the server answers (every watch stream first sends its status).
          const live = () => {
            if (answered) return;
            answered = true;
            setState({ status: "live", problem: undefined });
          };
          await open(cursor, abort.signal, live);
          attempt = 0;
        } catch (error) {
          if (abort.signal.aborted) return;
          setState({ status: "reconnecting", problem: problemOf(error) });
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** attempt, 10_000)));
      }
    })();
    return () => abort.abort();
  }, [running, ...deps]);
  return state;
}

/** Every item of a paged listing, page after page, until its last page or `max` items. */
export async function everyPage<T>(
  page: (pageToken: string) => Promise<{ readonly items: readonly T[]; readonly nextPageToken: string }>,
  max: number,
): Promise<T[]> {
  const items: T[] = [];
  let pageToken = "";
  do {
    const answer = await page(pageToken);
    items.push(...answer.items);
    pageToken = answer.nextPageToken;
  } while (pageToken && items.length < max);
  return items;
}

/**
 * `draw`, run at most once per `ms` however often the returned function is called: a stream's
 * events arrive one by one, the page redraws them in batches.
 */
export function batched(draw: () => void, ms: number): () => void {
  let scheduled = false;
  return () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(() => {
      scheduled = false;
      draw();
    }, ms);
  };
}
