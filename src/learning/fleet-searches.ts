import { setTimeout as delay } from "node:timers/promises";
import { LruCache } from "../lru.ts";
import { clip } from "./lessons.ts";
import type { RecentSearches, RememberedSearch } from "./searches.ts";
import type { SharedSearches } from "./shared-searches.ts";

/** A search answered on another replica is stored within this, most of the time. */
const SHARED_STORE_WAIT_MS = 250;
/** A run's shared searches are read again at most this often. */
const SHARED_REREAD_MS = 1_000;
/** Runs whose last read of the shared searches is kept. */
const RUNS_READ = 10_000;

/**
 * This server's searches and the fleet's (replicas on one PostgreSQL): each search answered here is
 * published to the shared searches, and a choice or report naming a search this server lacks reads it
 * back from them into this server's recent searches.
 */
export class FleetSearches {
  /** Each run's last read of the shared searches (showing): when it started, and the read. */
  private readonly runReads = new LruCache<string, { atMs: number; read: Promise<void> }>(RUNS_READ);

  constructor(
    private readonly shared: SharedSearches,
    private readonly recent: RecentSearches,
    private readonly windowMs: number,
    private readonly now: () => number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Publishes a search answered here, its request clipped as lessons store it. */
  publish(search: RememberedSearch): void {
    const { id, tenantId, runId, request, hits, atMs } = search;
    this.shared.publish({ id, tenantId, runId, request: clip(request), hits, atMs });
  }

  /**
   * The latest search of the run that showed `tool`, answered by another replica. A run's shared
   * searches are read at most once a second (and kept here), so runs that choose without searching
   * cost the database little; a read waits a moment first, for a search answered just now elsewhere
   * to be stored.
   */
  async showing(
    tenantId: string,
    runId: string,
    tool: string,
  ): Promise<{ search: RememberedSearch; rank: number } | undefined> {
    if (runId === "") return undefined;
    const key = `${tenantId}\u0000${runId}`;
    let last = this.runReads.get(key);
    // Choices of one run a moment apart share one read: the later ones wait for it.
    if (last === undefined || this.now() - last.atMs >= SHARED_REREAD_MS) {
      const read = delay(SHARED_STORE_WAIT_MS)
        .then(() => this.shared.ofRun(tenantId, runId, this.windowStart()))
        .then((stored) => {
          for (const search of stored) this.recent.adopt(search);
        })
        .catch((error: unknown) => this.onError(error));
      last = { atMs: this.now(), read };
      this.runReads.set(key, last);
    }
    await last.read;
    return this.recent.latestShowing(tenantId, runId, tool);
  }

  /** The tenant's search `id`, answered by another replica (read again once a moment later). */
  async find(tenantId: string, id: string): Promise<RememberedSearch | undefined> {
    try {
      const stored =
        (await this.shared.find(tenantId, id, this.windowStart())) ??
        (await delay(SHARED_STORE_WAIT_MS).then(() => this.shared.find(tenantId, id, this.windowStart())));
      return stored && this.recent.adopt(stored);
    } catch (error) {
      this.onError(error);
      return undefined;
    }
  }

  /** The oldest a search may be for a choice or report to count against it. */
  private windowStart(): number {
    return this.now() - this.windowMs;
  }
}
