import type { Db, Migration } from "../database/sqlite.ts";
import { afterCommit } from "../database/transaction.ts";
import type { EventSink, NewEvent } from "../events/index.ts";
import type { ReplicatedWrite, StateWriter } from "../replication/writes.ts";
import type { LearnedRequest } from "./model.ts";

/**
 * One row per (tenant, tool, request, actor): the weight that actor's choices gave the request for
 * the tool, as of `updated_at_ms` (it halves every half-life after). An actor's row is capped, so no
 * one principal owns a tool's learned weight. Reports remember their idempotency keys for a day.
 */
export const learningMigrations: readonly Migration[] = [
  {
    id: "learning/001-init",
    up: `
      CREATE TABLE learned_requests (
        tenant_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        request TEXT NOT NULL,
        actor TEXT NOT NULL,
        weight REAL NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, tool_name, request, actor)
      ) WITHOUT ROWID;
      CREATE INDEX learned_requests_age ON learned_requests (tenant_id, updated_at_ms);
      CREATE TABLE learning_reports (
        tenant_id TEXT NOT NULL,
        report_key TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, report_key)
      ) WITHOUT ROWID;
      CREATE INDEX learning_reports_age ON learning_reports (at_ms);
    `,
  },
  {
    // Counting a tenant's rows on every lesson read all of them; the count is kept instead.
    id: "learning/002-row-counts",
    up: `
      CREATE TABLE learning_tenants (
        tenant_id TEXT PRIMARY KEY,
        row_count INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    // Vectors of learned requests, local to each server (src/learning/vectors.ts); the index finds a
    // request's rows whatever their tool, to tell a stale vector.
    id: "learning/003-request-vectors",
    up: `
      CREATE TABLE learned_request_vectors (
        tenant_id TEXT NOT NULL,
        request TEXT NOT NULL,
        model_id TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (tenant_id, request)
      ) WITHOUT ROWID;
      CREATE INDEX learned_requests_request ON learned_requests (tenant_id, request);
    `,
  },
];

/** How learning is bounded and ages (config `learning`). */
export interface LearningBounds {
  /** Days after which a choice counts half. */
  readonly halfLifeDays: number;
  /** Requests kept per tool and tenant: the heaviest. */
  readonly maxRequestsPerTool: number;
  /** Rows kept per tenant: the most recently taught. */
  readonly maxRowsPerTenant: number;
}

/** The most (and, negated, the least) weight one actor's choices give one request of one tool. */
const ACTOR_CAP = 3;
/** A weight this close to 0 is forgotten. */
const NEGLIGIBLE = 0.01;
const DAY_MS = 86_400_000;
/** Rows per step of a read in slices (readInPages). */
const PAGE_ROWS = 2_000;

const REPORT_KEY_TTL_MS = DAY_MS;

/** A change to a tenant's learning: choices of `actor` for `request`, or a report naming a key. */
export interface Lesson {
  readonly tenantId: string;
  readonly actor: string;
  readonly request: string;
  readonly deltas: readonly { readonly tool: string; readonly delta: number }[];
  /** An idempotency key: a lesson with a key seen in the last day changes nothing. */
  readonly reportKey: string;
  /** Committed with the lesson (a report's `tool_outcome_reported`). */
  readonly event?: NewEvent;
}

type Reset = { readonly tenantId: string; readonly tool: string };
type Import = { readonly tenantId: string; readonly entries: readonly LearnedRequest[] };

/**
 * The learned requests in SQLite, written through the StateWriter (every replica applies the same
 * changes to its copy). `changed` is told, after each commit, which (tenant, tool, request) keys moved
 * — or that a whole tenant did — so the in-memory models refresh only those.
 */
export class LearningStore {
  private readonly seen;
  private readonly remember;
  private readonly forgetKeys;
  private readonly row;
  private readonly upsert;
  private readonly remove;
  private readonly requestsOf;
  private readonly lightest;
  private readonly removeRequest;
  private readonly rowCount;
  private readonly removeOldest;
  private readonly rowsOfTenant;
  private readonly rowsPage;
  private readonly rowsOfRequest;
  private readonly clearTenant;
  private readonly clearTool;
  private readonly rowsStored;
  private readonly addRows;

  constructor(
    private readonly db: Db,
    private readonly writer: StateWriter,
    private readonly bounds: LearningBounds,
    private readonly changed: (tenantId: string, keys: readonly TaughtKey[] | "all") => void,
    private readonly events: EventSink | undefined,
  ) {
    this.seen = db.prepare<[string, string, number], { at_ms: number }>(
      "SELECT at_ms FROM learning_reports WHERE tenant_id = ? AND report_key = ? AND at_ms >= ?",
    );
    this.remember = db.prepare<[string, string, number]>(
      "INSERT OR REPLACE INTO learning_reports (tenant_id, report_key, at_ms) VALUES (?, ?, ?)",
    );
    this.forgetKeys = db.prepare<[number]>("DELETE FROM learning_reports WHERE at_ms < ?");
    this.row = db.prepare<[string, string, string, string], { weight: number; updated_at_ms: number }>(
      `SELECT weight, updated_at_ms FROM learned_requests
       WHERE tenant_id = ? AND tool_name = ? AND request = ? AND actor = ?`,
    );
    this.upsert = db.prepare<[string, string, string, string, number, number]>(
      `INSERT OR REPLACE INTO learned_requests (tenant_id, tool_name, request, actor, weight, updated_at_ms)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.remove = db.prepare<[string, string, string, string]>(
      "DELETE FROM learned_requests WHERE tenant_id = ? AND tool_name = ? AND request = ? AND actor = ?",
    );
    this.requestsOf = db.prepare<[string, string], { n: number }>(
      "SELECT COUNT(DISTINCT request) AS n FROM learned_requests WHERE tenant_id = ? AND tool_name = ?",
    );
    this.lightest = db.prepare<[string, string], { request: string }>(
      `SELECT request FROM learned_requests WHERE tenant_id = ? AND tool_name = ?
       GROUP BY request ORDER BY SUM(weight), MAX(updated_at_ms), request LIMIT 1`,
    );
    this.removeRequest = db.prepare<[string, string, string]>(
      "DELETE FROM learned_requests WHERE tenant_id = ? AND tool_name = ? AND request = ?",
    );
    this.rowCount = db.prepare<[string], { n: number }>(
      "SELECT COUNT(*) AS n FROM learned_requests WHERE tenant_id = ?",
    );
    this.removeOldest = db.prepare<[string, number], TaughtKey>(
      `DELETE FROM learned_requests WHERE (tenant_id, tool_name, request, actor) IN (
         SELECT tenant_id, tool_name, request, actor FROM learned_requests WHERE tenant_id = ?
         ORDER BY updated_at_ms, tool_name, request, actor LIMIT ?)
       RETURNING tool_name AS tool, request`,
    );
    this.rowsStored = db.prepare<[string], { row_count: number }>(
      "SELECT row_count FROM learning_tenants WHERE tenant_id = ?",
    );
    this.addRows = db.prepare<[string, number, number]>(
      `INSERT INTO learning_tenants (tenant_id, row_count) VALUES (?, ?)
       ON CONFLICT (tenant_id) DO UPDATE SET row_count = row_count + ?`,
    );
    this.rowsOfTenant = db.prepare<[string], Row>(
      "SELECT tool_name, request, weight, updated_at_ms FROM learned_requests WHERE tenant_id = ?",
    );
    this.rowsPage = db.prepare<[string, string, string, string, number], Row & { actor: string }>(
      `SELECT tool_name, request, actor, weight, updated_at_ms FROM learned_requests
       WHERE tenant_id = ? AND (tool_name, request, actor) > (?, ?, ?)
       ORDER BY tool_name, request, actor LIMIT ?`,
    );
    this.rowsOfRequest = db.prepare<[string, string, string], Row>(
      `SELECT tool_name, request, weight, updated_at_ms FROM learned_requests
       WHERE tenant_id = ? AND tool_name = ? AND request = ?`,
    );
    this.clearTenant = db.prepare<[string]>("DELETE FROM learned_requests WHERE tenant_id = ?");
    this.clearTool = db.prepare<[string, string]>(
      "DELETE FROM learned_requests WHERE tenant_id = ? AND tool_name = ?",
    );
  }

  /** The tenant's rows, counted once and then kept in step with every insert and delete. */
  private rowsOf(tenantId: string): number {
    const stored = this.rowsStored.get(tenantId);
    if (stored) return stored.row_count;
    const n = this.rowCount.get(tenantId)?.n ?? 0;
    this.addRows.run(tenantId, n, n);
    return n;
  }

  private countRows(tenantId: string, delta: number): void {
    if (delta !== 0) this.addRows.run(tenantId, delta, delta);
  }

  /** The change kinds this store writes, for replicas to apply (src/replication). */
  get writes(): readonly ReplicatedWrite<never, unknown>[] {
    return [this.teachWrite, this.resetWrite, this.importWrite];
  }

  /** Applies `lesson`; false when its report key was seen in the last day (nothing changed). */
  teach(lesson: Lesson): Promise<boolean> {
    return this.writer.write(this.teachWrite, lesson, lesson.tenantId);
  }

  /** Forgets what `tenantId` learned (of `tool` only, when given). */
  reset(tenantId: string, tool = ""): Promise<void> {
    return this.writer.write(this.resetWrite, { tenantId, tool }, tenantId);
  }

  /** Adds exported learned requests (as one actor, "import", capped like any other). */
  import(tenantId: string, entries: readonly LearnedRequest[]): Promise<void> {
    return this.writer.write(this.importWrite, { tenantId, entries }, tenantId);
  }

  /**
   * The tenant's learned requests as `read` gives them, one page of rows per step, for a server that
   * reads a whole tenant in slices (a tenant at its row bound is too much for one turn). Rows are read
   * in key order, so a request's rows from several actors are summed across a page's end.
   */
  *readInPages(tenantId: string, nowMs: number): Generator<LearnedRequest[]> {
    let after = { tool: "", request: "", actor: "" };
    let open: LearnedRequest | undefined;
    for (;;) {
      const rows = this.rowsPage.all(tenantId, after.tool, after.request, after.actor, PAGE_ROWS);
      const done: LearnedRequest[] = [];
      for (const r of rows) {
        const weight = r.weight * this.decay(nowMs - r.updated_at_ms);
        if (open && open.tool === r.tool_name && open.request === r.request)
          open = { ...open, weight: open.weight + weight };
        else {
          if (open) done.push(open);
          open = { tool: r.tool_name, request: r.request, weight };
        }
      }
      const last = rows.at(-1);
      if (rows.length < PAGE_ROWS || last === undefined) {
        if (open) done.push(open);
        yield done;
        return;
      }
      after = { tool: last.tool_name, request: last.request, actor: last.actor };
      yield done;
    }
  }

  /** The tenant's learned requests with their weights decayed to `nowMs`, summed over actors. */
  read(tenantId: string, nowMs: number, keys?: readonly TaughtKey[]): LearnedRequest[] {
    const rows = keys
      ? keys.flatMap((k) => this.rowsOfRequest.all(tenantId, k.tool, k.request))
      : this.rowsOfTenant.all(tenantId);
    const sums = new Map<string, LearnedRequest>();
    for (const r of rows) {
      const key = `${r.tool_name}\u0000${r.request}`;
      const weight = r.weight * this.decay(nowMs - r.updated_at_ms) + (sums.get(key)?.weight ?? 0);
      sums.set(key, { tool: r.tool_name, request: r.request, weight });
    }
    // A key taught away to nothing reads as weight 0, so the model forgets it.
    for (const k of keys ?? [])
      if (!sums.has(`${k.tool}\u0000${k.request}`))
        sums.set(`${k.tool}\u0000${k.request}`, { ...k, weight: 0 });
    return [...sums.values()];
  }

  /** Ages count in whole days, so a learned score holds still within a day (and across restarts). */
  private decay(ageMs: number): number {
    return 0.5 ** (Math.floor(Math.max(0, ageMs) / DAY_MS) / this.bounds.halfLifeDays);
  }

  private readonly teachWrite: ReplicatedWrite<Lesson, boolean> = {
    kind: "learning/teach",
    apply: (lesson, { atMs }) => {
      const { tenantId, actor, request } = lesson;
      if (lesson.reportKey !== "") {
        this.forgetKeys.run(atMs - REPORT_KEY_TTL_MS);
        if (this.seen.get(tenantId, lesson.reportKey, atMs - REPORT_KEY_TTL_MS)) return false;
        this.remember.run(tenantId, lesson.reportKey, atMs);
      }
      const keys: TaughtKey[] = [];
      // The count is started (from the rows as they are) before any row changes.
      if (lesson.deltas.length > 0) this.rowsOf(tenantId);
      for (const { tool, delta } of lesson.deltas) {
        const old = this.row.get(tenantId, tool, request, actor);
        const before = old ? old.weight * this.decay(atMs - old.updated_at_ms) : 0;
        const weight = Math.max(-ACTOR_CAP, Math.min(ACTOR_CAP, before + delta));
        if (Math.abs(weight) < NEGLIGIBLE)
          this.countRows(tenantId, -this.remove.run(tenantId, tool, request, actor).changes);
        else {
          this.upsert.run(tenantId, tool, request, actor, weight, atMs);
          if (!old) this.countRows(tenantId, 1);
        }
        keys.push({ tool, request });
        while ((this.requestsOf.get(tenantId, tool)?.n ?? 0) > this.bounds.maxRequestsPerTool) {
          const lightest = this.lightest.get(tenantId, tool);
          if (!lightest) break;
          this.countRows(tenantId, -this.removeRequest.run(tenantId, tool, lightest.request).changes);
          keys.push({ tool, request: lightest.request });
        }
      }
      const over = lesson.deltas.length > 0 ? this.rowsOf(tenantId) - this.bounds.maxRowsPerTenant : 0;
      if (over > 0) {
        // Down to 95 % of the bound at once, so a tenant at its bound does not prune on every lesson.
        const removed = this.removeOldest.all(
          tenantId,
          over + Math.floor(this.bounds.maxRowsPerTenant * 0.05),
        );
        this.countRows(tenantId, -removed.length);
        keys.push(...removed);
      }
      if (lesson.event) this.events?.emit(lesson.event);
      // Only the keys that moved are read again (a pruned one reads as weight 0: forgotten).
      afterCommit(this.db, () => this.changed(tenantId, keys));
      return true;
    },
  };

  private readonly resetWrite: ReplicatedWrite<Reset, void> = {
    kind: "learning/reset",
    apply: ({ tenantId, tool }) => {
      this.rowsOf(tenantId);
      const removed = tool === "" ? this.clearTenant.run(tenantId) : this.clearTool.run(tenantId, tool);
      this.countRows(tenantId, -removed.changes);
      afterCommit(this.db, () => this.changed(tenantId, "all"));
    },
  };

  private readonly importWrite: ReplicatedWrite<Import, void> = {
    kind: "learning/import",
    apply: ({ tenantId, entries }, context) => {
      for (const entry of entries)
        this.teachWrite.apply(
          {
            tenantId,
            actor: "import",
            request: entry.request,
            deltas: [{ tool: entry.tool, delta: entry.weight }],
            reportKey: "",
          },
          context,
        );
      afterCommit(this.db, () => this.changed(tenantId, "all"));
    },
  };
}

/** A (tool, request) pair whose weight a change moved. */
export interface TaughtKey {
  readonly tool: string;
  readonly request: string;
}

interface Row {
  tool_name: string;
  request: string;
  weight: number;
  updated_at_ms: number;
}
