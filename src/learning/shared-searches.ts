import type { PostgresMigration } from "../replication/change-log.ts";
import type { SharedDatabase } from "../replication/writes.ts";
import { SEARCHES_PER_RUN, type StoredSearch } from "./searches.ts";

/**
 * The searches of the last window, shared by the replicas of a fleet (PostgreSQL), so a choice or a
 * report reaching another replica than the one that answered the search still teaches it.
 */
export interface SharedSearches {
  /** Stores a search soon after it was answered (with others of the moment); never fails the search. */
  publish(search: StoredSearch): void;
  /** The tenant's search `id`, answered at or after `sinceMs`; another tenant's reads as unknown. */
  find(tenantId: string, id: string, sinceMs: number): Promise<StoredSearch | undefined>;
  /** The run's latest searches answered at or after `sinceMs`, newest first. */
  ofRun(tenantId: string, runId: string, sinceMs: number): Promise<StoredSearch[]>;
}

/** Searches stored per statement; more wait for the next one. */
const BATCH = 500;
/** Searches waiting to be stored past which new ones are dropped (the database is away or slow). */
const MAX_WAITING = 20_000;

/**
 * UNLOGGED: searches are worth a selection window, not a crash: PostgreSQL empties the table after a
 * crash, and writing it costs no WAL.
 */
const MIGRATIONS: readonly PostgresMigration[] = [
  {
    id: "learning/001-recent-searches",
    up: `
      CREATE UNLOGGED TABLE wayfind_recent_searches (
        search_id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        request TEXT NOT NULL,
        hits JSONB NOT NULL,
        at_ms BIGINT NOT NULL
      );
      CREATE INDEX wayfind_recent_searches_run ON wayfind_recent_searches (tenant_id, run_id, at_ms DESC);
      CREATE INDEX wayfind_recent_searches_age ON wayfind_recent_searches (at_ms);
    `,
  },
];

interface Row {
  search_id: string;
  tenant_id: string;
  run_id: string;
  request: string;
  hits: string[];
  at_ms: string;
}

const COLUMNS = "search_id, tenant_id, run_id, request, hits, at_ms";

/**
 * SharedSearches in the fleet's PostgreSQL; searches older than the window are deleted each minute.
 * Its table is made by `migrate`, which the server awaits before it serves.
 */
export class PostgresSearches implements SharedSearches {
  private waiting: StoredSearch[] = [];
  private flushing: Promise<void> | undefined;
  private scheduled = false;
  private readonly pruner: NodeJS.Timeout;

  constructor(
    private readonly shared: SharedDatabase,
    private readonly windowMs: number,
    private readonly onError: (error: unknown) => void,
  ) {
    this.pruner = setInterval(() => void this.prune(), 60_000);
    this.pruner.unref();
  }

  migrate(): Promise<void> {
    return this.shared.migrate(MIGRATIONS);
  }

  publish(search: StoredSearch): void {
    // PostgreSQL text holds no NUL: such a search stays with the server that answered it.
    if (this.waiting.length >= MAX_WAITING || hasNul(search)) return;
    this.waiting.push(search);
    // The searches of one turn of the event loop go in one statement.
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  async find(tenantId: string, id: string, sinceMs: number): Promise<StoredSearch | undefined> {
    const rows = await this.shared.query<Row>(
      `SELECT ${COLUMNS} FROM wayfind_recent_searches WHERE search_id = $1 AND tenant_id = $2 AND at_ms >= $3`,
      [id, tenantId, sinceMs],
      { prepared: true },
    );
    return rows[0] && searchOf(rows[0]);
  }

  async ofRun(tenantId: string, runId: string, sinceMs: number): Promise<StoredSearch[]> {
    const rows = await this.shared.query<Row>(
      `SELECT ${COLUMNS} FROM wayfind_recent_searches WHERE tenant_id = $1 AND run_id = $2 AND at_ms >= $3
       ORDER BY at_ms DESC LIMIT ${SEARCHES_PER_RUN}`,
      [tenantId, runId, sinceMs],
      { prepared: true },
    );
    return rows.map(searchOf);
  }

  /** Stores what waits, a batch per statement, until nothing does; then resolves. */
  async settled(): Promise<void> {
    while (this.flushing || this.waiting.length > 0) await (this.flushing ?? this.flush());
  }

  close(): Promise<void> {
    clearInterval(this.pruner);
    return this.settled();
  }

  private flush(): Promise<void> {
    this.flushing ??= this.store().finally(() => {
      this.flushing = undefined;
      // Searches published while the last statement ran.
      if (this.waiting.length > 0) void this.flush();
    });
    return this.flushing;
  }

  /** Stores what waits, a batch per statement; on a failure, drops what waits. */
  private async store(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, BATCH);
        // One JSON parameter, read by PostgreSQL: no per-value escaping in JavaScript.
        await this.shared.query(
          `INSERT INTO wayfind_recent_searches (${COLUMNS})
           SELECT search_id, tenant_id, run_id, request, hits, at_ms
           FROM jsonb_to_recordset($1::jsonb)
             AS r(search_id text, tenant_id text, run_id text, request text, hits jsonb, at_ms bigint)
           ON CONFLICT (search_id) DO NOTHING`,
          [
            JSON.stringify(
              batch.map((s) => ({
                search_id: s.id,
                tenant_id: s.tenantId,
                run_id: s.runId,
                request: s.request,
                hits: s.hits,
                at_ms: s.atMs,
              })),
            ),
          ],
        );
      }
    } catch (error) {
      // The database is away: those searches stay with the servers that answered them, which still
      // learn from them.
      this.waiting = [];
      this.onError(error);
    }
  }

  private async prune(): Promise<void> {
    try {
      await this.shared.query("DELETE FROM wayfind_recent_searches WHERE at_ms < $1", [
        Date.now() - this.windowMs,
      ]);
    } catch (error) {
      this.onError(error);
    }
  }
}

function hasNul(search: StoredSearch): boolean {
  return [search.tenantId, search.runId, search.request, ...search.hits].some((text) =>
    text.includes("\u0000"),
  );
}

function searchOf(row: Row): StoredSearch {
  return {
    id: row.search_id,
    tenantId: row.tenant_id,
    runId: row.run_id,
    request: row.request,
    hits: row.hits,
    atMs: Number(row.at_ms),
  };
}
