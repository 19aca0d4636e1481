import type { Caller } from "../caller/caller.ts";
import type { Db } from "../database/sqlite.ts";
import { failedPrecondition, invalidArgument } from "../errors.ts";
import type { EventSink } from "../events/index.ts";
import { checkSize, LIMITS } from "../limits.ts";
import { LruCache } from "../lru.ts";
import { LocalWriter, type ReplicatedWrite, type StateWriter } from "../replication/writes.ts";

export type ActivationScope = "run" | "session";
type ActivationSource = "explicit" | "resolve" | "lazy_group";
/**
 * Why an activation was refused. Deliberately a closed set: a free-text reason could carry the name
 * of a tool the caller may not see, and denied events must never name it (docs/design.md §5).
 * `unavailable` covers "unknown" and "not visible" alike, so the event cannot tell them apart.
 */
export type ActivationDenyReason = "unavailable" | "missing_scope_id" | "limit_exceeded";

export interface ActivateOptions {
  readonly scope: ActivationScope;
  readonly source: ActivationSource;
  readonly reason: string;
}

export interface ActivationResult {
  /** Newly activated by this call, in request order. */
  readonly activated: readonly string[];
  /** Already active in that scope before this call (no event emitted). */
  readonly alreadyActive: readonly string[];
}

export interface DeactivationResult {
  readonly deactivated: readonly string[];
  readonly notActive: readonly string[];
}

export interface ActivationStoreOptions {
  readonly events?: EventSink;
  /** How activations are written: the server's (shared by replicas); default this database alone. */
  readonly writer?: StateWriter;
  /** Told when a run's idle clock could not be moved (it then expires as if unused). */
  readonly onError?: (error: unknown) => void;
  /**
   * Idle TTL of run-scoped activations: a run's activations expire together once the run has not
   * been used (activate, deactivate or activeFor) for this long. Session activations never expire.
   */
  readonly runActivationTtlSeconds: number;
  /** Clock in epoch milliseconds; injectable for tests. */
  readonly now?: () => number;
}

export const ACTIVATION_LIMITS = { maxNamesPerCall: 100, maxNameLength: 256 } as const;

/** Reads that touch the run's idle clock do so at most this often, to keep reads nearly write-free. */
const TOUCH_GRANULARITY_MS = 1000;
/** Runs whose last touch this store remembers (to skip touching them again within the granularity). */
const TOUCHED_RUNS_REMEMBERED = 10_000;

/** Whose activations a change is about; the scope id is the session or run id of `scope`. */
type ActivationOwner = {
  readonly tenantId: string;
  readonly projectId: string;
  readonly sessionId: string;
  readonly runId: string;
};
type DeactivateChange = ActivationOwner & {
  readonly names: readonly string[];
  readonly scope: ActivationScope;
  readonly scopeId: string;
};
type ActivateChange = DeactivateChange & {
  readonly source: ActivationSource;
  readonly reason: string;
};

/**
 * Activations of tools per run and per session, in SQLite. This store trusts the names it is given:
 * callers must pass only names access control already admitted (use `activateVisible`), and report
 * refusals with `deny` — which never names the tool.
 */
export class ActivationStore {
  private readonly events: EventSink | undefined;
  private readonly writer: StateWriter;
  private readonly onError: (error: unknown) => void;
  private readonly touchedRuns = new LruCache<string, number>(TOUCHED_RUNS_REMEMBERED);
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly insert;
  private readonly delete;
  private readonly purge;
  private readonly touchRun;
  private readonly select;

  constructor(db: Db, options: ActivationStoreOptions) {
    if (!(options.runActivationTtlSeconds > 0)) throw invalidArgument("runActivationTtlSeconds must be > 0");
    this.events = options.events;
    this.ttlMs = options.runActivationTtlSeconds * 1000;
    this.now = options.now ?? Date.now;
    this.writer = options.writer ?? new LocalWriter(db, this.now);
    this.onError = options.onError ?? (() => {});
    this.insert = db.prepare<[string, string, string, string, string, string, string, number, number]>(
      `INSERT OR IGNORE INTO tool_activations
         (tenant_id, project_id, scope, scope_id, tool_name, source, reason, activated_at_ms, last_used_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.delete = db.prepare<[string, string, string, string, string]>(
      "DELETE FROM tool_activations WHERE tenant_id = ? AND project_id = ? AND scope = ? AND scope_id = ? AND tool_name = ?",
    );
    this.purge = db.prepare<[number]>(
      "DELETE FROM tool_activations WHERE scope = 'run' AND last_used_at_ms < ?",
    );
    // The unary `+` keeps SQLite on the UNIQUE (tenant, project, scope, scope_id, …) key: left to
    // itself it picks the expiry index and scans every live run, a cost that grows with the runs.
    this.touchRun = db.prepare<[number, string, string, string, number, number]>(
      `UPDATE tool_activations SET last_used_at_ms = ?
       WHERE tenant_id = ? AND project_id = ? AND scope = 'run' AND scope_id = ?
         AND +last_used_at_ms >= ? AND +last_used_at_ms < ?`,
    );
    // One index seek per scope; an OR of both would read every activation of the tenant.
    this.select = db.prepare<[string, string, string, number, string, string, string], { tool_name: string }>(
      `SELECT tool_name FROM (
         SELECT tool_name, seq FROM tool_activations
         WHERE tenant_id = ? AND project_id = ? AND scope = 'run' AND scope_id = ? AND +last_used_at_ms >= ?
         UNION ALL
         SELECT tool_name, seq FROM tool_activations
         WHERE tenant_id = ? AND project_id = ? AND scope = 'session' AND scope_id = ?
       )
       GROUP BY tool_name ORDER BY MIN(seq)`,
    );
  }

  /**
   * Activates `toolNames` for the caller's run or session. Each name lands once, whichever concurrent
   * writer (or replica) gets there first: the others find it already active, and only the first emits
   * `tool_activated`.
   */
  async activate(
    caller: Caller,
    toolNames: readonly string[],
    options: ActivateOptions,
  ): Promise<ActivationResult> {
    const scopeId = this.scopeId(caller, options.scope, true);
    const names = checkNames(toolNames);
    checkSize(LIMITS.activateToolsReason, options.reason.length);
    const change: ActivateChange = { ...ownerOf(caller), names, scopeId, ...options };
    return this.writer.write(this.activateWrite, change, caller.tenantId);
  }

  async deactivate(
    caller: Caller,
    toolNames: readonly string[],
    scope: ActivationScope,
  ): Promise<DeactivationResult> {
    const scopeId = this.scopeId(caller, scope, false);
    const names = checkNames(toolNames);
    const change: DeactivateChange = { ...ownerOf(caller), names, scope, scopeId };
    return this.writer.write(this.deactivateWrite, change, caller.tenantId);
  }

  /** The change kinds this store writes, for replicas to apply (src/replication). */
  get writes(): readonly ReplicatedWrite<never, unknown>[] {
    return [this.activateWrite, this.deactivateWrite, this.touchWrite];
  }

  readonly activateWrite: ReplicatedWrite<ActivateChange, ActivationResult> = {
    kind: "activations/activate",
    apply: (change, { atMs }) => {
      this.purge.run(atMs - this.ttlMs);
      const activated: string[] = [];
      const alreadyActive: string[] = [];
      for (const name of change.names) {
        const { changes } = this.insert.run(
          change.tenantId,
          change.projectId,
          change.scope,
          change.scopeId,
          name,
          change.source,
          change.reason,
          atMs,
          atMs,
        );
        if (changes === 1) {
          activated.push(name);
          // In the activation's transaction: a crash keeps both or neither, a rollback delivers nothing.
          this.events?.emit({
            type: "tool_activated",
            ...eventScope(change),
            attributes: { tool: name, scope: change.scope, source: change.source, reason: change.reason },
          });
        } else alreadyActive.push(name);
      }
      if (change.scope === "run") this.touchRunAt(change, atMs, true);
      return { activated, alreadyActive };
    },
  };

  readonly deactivateWrite: ReplicatedWrite<DeactivateChange, DeactivationResult> = {
    kind: "activations/deactivate",
    apply: (change, { atMs }) => {
      this.purge.run(atMs - this.ttlMs);
      const deactivated: string[] = [];
      const notActive: string[] = [];
      for (const name of change.names) {
        const deleted = this.delete.run(
          change.tenantId,
          change.projectId,
          change.scope,
          change.scopeId,
          name,
        );
        (deleted.changes > 0 ? deactivated : notActive).push(name);
      }
      if (change.scope === "run") this.touchRunAt(change, atMs, true);
      return { deactivated, notActive };
    },
  };

  /** A read of a run's activations moves its idle clock (at most once per TOUCH_GRANULARITY_MS). */
  readonly touchWrite: ReplicatedWrite<ActivationOwner, void> = {
    kind: "activations/touch",
    apply: (owner, { atMs }) => this.touchRunAt(owner, atMs, false),
  };

  /**
   * Names active for the caller: its run's (unexpired) and its session's activations, each name once,
   * in activation order (oldest first, by its earliest activation). Names are as stored: filter them
   * through access control before showing them, since policy may have changed since.
   */
  activeFor(caller: Caller): string[] {
    if (caller.runId === "" && caller.sessionId === "") return [];
    const now = this.now();
    if (caller.runId !== "") this.keepRunAlive(caller, now);
    const rows = this.select.all(
      caller.tenantId,
      caller.projectId,
      caller.runId,
      now - this.ttlMs,
      caller.tenantId,
      caller.projectId,
      caller.sessionId,
    );
    return rows.map((row) => row.tool_name);
  }

  /** Report a refused activation. Never takes a tool name (see ActivationDenyReason). */
  deny(caller: Caller, reason: ActivationDenyReason, count = 1): void {
    this.events?.emit({
      type: "tool_activation_denied",
      ...eventScope(caller),
      attributes: { reason, count },
    });
  }

  private scopeId(caller: Caller, scope: ActivationScope, reportDenied: boolean): string {
    const id = scope === "session" ? caller.sessionId : caller.runId;
    if (id === "") {
      if (reportDenied) this.deny(caller, "missing_scope_id");
      const field = scope === "session" ? "session_id" : "run_id";
      throw failedPrecondition(
        `activation scope "${scope}" needs caller.${field}; set it or use another scope`,
      );
    }
    return id;
  }

  /**
   * Moves the run's idle clock, unless this store did within TOUCH_GRANULARITY_MS. Alone on SQLite the
   * write is done before this returns; a replica sends it to the others and reads on meanwhile.
   */
  private keepRunAlive(caller: Caller, now: number): void {
    const key = `${caller.tenantId}\u0000${caller.projectId}\u0000${caller.runId}`;
    const last = this.touchedRuns.get(key);
    if (last !== undefined && now - last < TOUCH_GRANULARITY_MS && now >= last) return;
    this.touchedRuns.set(key, now);
    this.writer.write(this.touchWrite, ownerOf(caller), caller.tenantId).catch(this.onError);
  }

  private touchRunAt(owner: ActivationOwner, atMs: number, always: boolean): void {
    this.touchRun.run(
      atMs,
      owner.tenantId,
      owner.projectId,
      owner.runId,
      atMs - this.ttlMs,
      always ? atMs + 1 : atMs - TOUCH_GRANULARITY_MS,
    );
  }
}

function checkNames(toolNames: readonly string[]): string[] {
  const names = [...new Set(toolNames)];
  if (names.length === 0) throw invalidArgument("tool names must not be empty");
  if (names.length > ACTIVATION_LIMITS.maxNamesPerCall) {
    throw invalidArgument(`at most ${ACTIVATION_LIMITS.maxNamesPerCall} tool names per call`);
  }
  for (const name of names) {
    if (name.trim() === "" || name.length > ACTIVATION_LIMITS.maxNameLength) {
      throw invalidArgument(`tool names must be 1–${ACTIVATION_LIMITS.maxNameLength} non-blank characters`);
    }
  }
  return names;
}

function eventScope(owner: ActivationOwner): { tenantId: string; sessionId: string; runId: string } {
  return { tenantId: owner.tenantId, sessionId: owner.sessionId, runId: owner.runId };
}

function ownerOf(caller: Caller): ActivationOwner {
  return {
    tenantId: caller.tenantId,
    projectId: caller.projectId,
    sessionId: caller.sessionId,
    runId: caller.runId,
  };
}
