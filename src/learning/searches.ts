import { randomBytes } from "node:crypto";
import { LruCache } from "../lru.ts";

/** A search as learning remembers it, to read later choices against. */
export interface RememberedSearch {
  readonly id: string;
  readonly tenantId: string;
  readonly runId: string;
  /** The request as the caller sent it. */
  readonly request: string;
  /** Hit names, best first. */
  readonly hits: readonly string[];
  readonly atMs: number;
  /** Hits already counted as chosen, so a GetTools then a ResolveTool of one tool teach once. */
  readonly chosen: Set<string>;
}

/** Searches remembered on this server (each ~1 KB with its hits). */
const SEARCHES_REMEMBERED = 50_000;
/** Runs whose latest searches are kept for reading choices against. */
const RUNS_REMEMBERED = 20_000;
/** A choice is read against this many of its run's latest searches. */
const SEARCHES_PER_RUN = 8;

/**
 * The searches of the last window, by id and by (tenant, run), in memory: a choice made on another
 * replica than the one that answered the search is not seen (docs/search.md says so). Bounded by
 * count; ids are random, so one tenant cannot guess another's.
 */
export class RecentSearches {
  private readonly byId = new LruCache<string, RememberedSearch>(SEARCHES_REMEMBERED);
  private readonly byRun = new LruCache<string, string[]>(RUNS_REMEMBERED);

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  remember(tenantId: string, runId: string, request: string, hits: readonly string[]): string {
    const id = `s_${randomBytes(12).toString("base64url")}`;
    this.byId.set(id, { id, tenantId, runId, request, hits, atMs: this.now(), chosen: new Set() });
    if (runId !== "") {
      const key = runKey(tenantId, runId);
      const ids = [...(this.byRun.get(key) ?? []), id].slice(-SEARCHES_PER_RUN);
      this.byRun.set(key, ids);
    }
    return id;
  }

  /** The tenant's search `id`, if still remembered and within the window; another tenant's reads as unknown. */
  find(tenantId: string, id: string): RememberedSearch | undefined {
    const search = this.byId.get(id);
    if (!search || search.tenantId !== tenantId || this.now() - search.atMs > this.windowMs) return undefined;
    return search;
  }

  /** The latest search of the run (within the window) that showed `tool`, with the tool's rank (0 = first). */
  latestShowing(
    tenantId: string,
    runId: string,
    tool: string,
  ): { search: RememberedSearch; rank: number } | undefined {
    if (runId === "") return undefined;
    const ids = this.byRun.get(runKey(tenantId, runId)) ?? [];
    for (let i = ids.length - 1; i >= 0; i--) {
      const search = this.find(tenantId, ids[i] as string);
      const rank = search ? search.hits.indexOf(tool) : -1;
      if (search && rank >= 0) return { search, rank };
    }
    return undefined;
  }
}

function runKey(tenantId: string, runId: string): string {
  return `${tenantId}\u0000${runId}`;
}
