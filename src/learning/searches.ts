import { randomBytes } from "node:crypto";
import { notFound, quoteInput, type WayfindError } from "../errors.ts";
import { LruCache } from "../lru.ts";

/** A search as its answer left it, and as the replicas of a fleet share it (shared-searches.ts). */
export interface StoredSearch {
  readonly id: string;
  readonly tenantId: string;
  readonly runId: string;
  /** The request as the caller sent it. */
  readonly request: string;
  /** Hit names, best first. */
  readonly hits: readonly string[];
  readonly atMs: number;
}

/** A search as learning remembers it, to read later choices against. */
export interface RememberedSearch extends StoredSearch {
  /** Hits already counted as chosen, so a GetTools then a ResolveTool of one tool teach once. */
  readonly chosen: Set<string>;
}

/** Searches remembered on this server (each at most ~1.5 KB: a clipped request and its hit names). */
const SEARCHES_REMEMBERED = 20_000;
/** Searches remembered per tenant: one tenant's flood of searches forgets its own first. */
const SEARCHES_PER_TENANT = 2_000;
/** Runs whose latest searches are kept for reading choices against. */
const RUNS_REMEMBERED = 20_000;
/** A choice is read against this many of its run's latest searches. */
export const SEARCHES_PER_RUN = 8;

/**
 * The searches of the last window, by id and by (tenant, run), in memory: those this server answered,
 * and those of other replicas it read back (shared-searches.ts). Bounded by count, per tenant and in
 * all; ids are random, so one tenant cannot guess another's.
 */
export class RecentSearches {
  private readonly byId = new LruCache<string, RememberedSearch>(SEARCHES_REMEMBERED);
  private readonly byRun = new LruCache<string, string[]>(RUNS_REMEMBERED);
  /** Each tenant's remembered ids, oldest first (some may have left `byId` already). */
  private readonly byTenant = new LruCache<string, string[]>(SEARCHES_REMEMBERED);

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  remember(tenantId: string, runId: string, request: string, hits: readonly string[]): RememberedSearch {
    const id = `s_${randomBytes(12).toString("base64url")}`;
    return this.adopt({ id, tenantId, runId, request, hits, atMs: this.now() });
  }

  /** Remembers a search answered here or, read from the fleet's shared searches, by another replica. */
  adopt(stored: StoredSearch): RememberedSearch {
    const { id, tenantId, runId } = stored;
    const known = this.byId.get(id);
    if (known) return known;
    const search = { ...stored, chosen: new Set<string>() };
    this.byId.set(id, search);
    const own = this.byTenant.get(tenantId) ?? [];
    own.push(id);
    if (own.length > SEARCHES_PER_TENANT) this.byId.delete(own.shift() as string);
    // Ids the global bound forgot leave the list too, so the lists hold about what byId holds.
    while (own.length > 0 && !this.byId.has(own[0] as string)) own.shift();
    this.byTenant.set(tenantId, own);
    if (runId !== "") {
      const key = runKey(tenantId, runId);
      const ids = [...(this.byRun.get(key) ?? []), id].slice(-SEARCHES_PER_RUN);
      this.byRun.set(key, ids);
    }
    return search;
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

/** A search id this server does not remember for the caller's tenant: unknown, expired or another's alike. */
export function unknownSearch(searchId: string): WayfindError {
  return notFound(
    `search_id ${quoteInput(searchId)} is unknown or expired: searches are remembered for learning.selection_window_seconds after they were answered; report sooner, or leave search_id empty`,
  );
}
