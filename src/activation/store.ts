import type { Caller } from "../caller/caller.ts";
import type { Db } from "../database/sqlite.ts";
import { writeTransaction } from "../database/transaction.ts";
import { failedPrecondition, invalidArgument } from "../errors.ts";
import type { EventSink } from "../events/index.ts";
import { checkSize, LIMITS } from "../limits.ts";

export type ActivationScope = "run" | "session";
export type ActivationSource = "explicit" | "resolve" | "lazy_group";
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

/**
 * Activations of tools per run and per session, in SQLite. This store trusts the names it is given:
 * callers must pass only names access control already admitted (use `activateVisible`), and report
 * refusals with `deny` — which never names the tool.
 */
export class ActivationStore {
  readonly #db: Db;
  readonly #events: EventSink | undefined;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #insert;
  readonly #delete;
  readonly #purge;
  readonly #touchRun;
  readonly #select;

  constructor(db: Db, options: ActivationStoreOptions) {
    if (!(options.runActivationTtlSeconds > 0)) throw invalidArgument("runActivationTtlSeconds must be > 0");
    this.#db = db;
    this.#events = options.events;
    this.#ttlMs = options.runActivationTtlSeconds * 1000;
    this.#now = options.now ?? Date.now;
    this.#insert = db.prepare<[string, string, string, string, string, string, string, number, number]>(
      `INSERT OR IGNORE INTO tool_activations
         (tenant_id, project_id, scope, scope_id, tool_name, source, reason, activated_at_ms, last_used_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#delete = db.prepare<[string, string, string, string, string]>(
      "DELETE FROM tool_activations WHERE tenant_id = ? AND project_id = ? AND scope = ? AND scope_id = ? AND tool_name = ?",
    );
    this.#purge = db.prepare<[number]>(
      "DELETE FROM tool_activations WHERE scope = 'run' AND last_used_at_ms < ?",
    );
    // The unary `+` keeps SQLite on the UNIQUE (tenant, project, scope, scope_id, …) key: left to
    // itself it picks the expiry index and scans every live run (1.5 ms vs 10 µs at 10k rows).
    this.#touchRun = db.prepare<[number, string, string, string, number, number]>(
      `UPDATE tool_activations SET last_used_at_ms = ?
       WHERE tenant_id = ? AND project_id = ? AND scope = 'run' AND scope_id = ?
         AND +last_used_at_ms >= ? AND +last_used_at_ms < ?`,
    );
    // One index seek per scope; an OR of both would read every activation of the tenant.
    this.#select = db.prepare<
      [string, string, string, number, string, string, string],
      { tool_name: string }
    >(
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

  activate(caller: Caller, toolNames: readonly string[], options: ActivateOptions): ActivationResult {
    const scopeId = this.#scopeId(caller, options.scope, true);
    const names = checkNames(toolNames);
    checkSize(LIMITS.activateToolsReason, options.reason.length);
    const activated: string[] = [];
    const alreadyActive: string[] = [];
    const now = this.#now();
    // The UNIQUE key makes each name land exactly once, whichever concurrent writer gets the lock first.
    writeTransaction(this.#db, () => {
      this.#purge.run(now - this.#ttlMs);
      for (const name of names) {
        const { changes } = this.#insert.run(
          caller.tenantId,
          caller.projectId,
          options.scope,
          scopeId,
          name,
          options.source,
          options.reason,
          now,
          now,
        );
        if (changes === 1) {
          activated.push(name);
          // In the activation's transaction: a crash keeps both or neither, a rollback delivers nothing.
          this.#events?.emit({
            type: "tool_activated",
            ...eventScope(caller),
            attributes: { tool: name, scope: options.scope, source: options.source, reason: options.reason },
          });
        } else alreadyActive.push(name);
      }
      if (options.scope === "run") this.#touch(caller, now, true);
    });
    return { activated, alreadyActive };
  }

  deactivate(caller: Caller, toolNames: readonly string[], scope: ActivationScope): DeactivationResult {
    const scopeId = this.#scopeId(caller, scope, false);
    const names = checkNames(toolNames);
    const deactivated: string[] = [];
    const notActive: string[] = [];
    const now = this.#now();
    writeTransaction(this.#db, () => {
      this.#purge.run(now - this.#ttlMs);
      for (const name of names) {
        const { changes } = this.#delete.run(caller.tenantId, caller.projectId, scope, scopeId, name);
        (changes > 0 ? deactivated : notActive).push(name);
      }
      if (scope === "run") this.#touch(caller, now, true);
    });
    return { deactivated, notActive };
  }

  /**
   * Names active for the caller: its run's (unexpired) and its session's activations, each name once,
   * in activation order (oldest first, by its earliest activation). Names are as stored: filter them
   * through access control before showing them, since policy may have changed since.
   */
  activeFor(caller: Caller): string[] {
    if (caller.runId === "" && caller.sessionId === "") return [];
    const now = this.#now();
    if (caller.runId !== "") this.#touch(caller, now, false);
    const rows = this.#select.all(
      caller.tenantId,
      caller.projectId,
      caller.runId,
      now - this.#ttlMs,
      caller.tenantId,
      caller.projectId,
      caller.sessionId,
    );
    return rows.map((row) => row.tool_name);
  }

  /** Report a refused activation. Never takes a tool name (see ActivationDenyReason). */
  deny(caller: Caller, reason: ActivationDenyReason, count = 1): void {
    this.#events?.emit({
      type: "tool_activation_denied",
      ...eventScope(caller),
      attributes: { reason, count },
    });
  }

  /** Deletes expired run activations; returns how many. Also done on every write. */
  purgeExpired(): number {
    return this.#purge.run(this.#now() - this.#ttlMs).changes;
  }

  #scopeId(caller: Caller, scope: ActivationScope, reportDenied: boolean): string {
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

  #touch(caller: Caller, now: number, always: boolean): void {
    this.#touchRun.run(
      now,
      caller.tenantId,
      caller.projectId,
      caller.runId,
      now - this.#ttlMs,
      always ? now + 1 : now - TOUCH_GRANULARITY_MS,
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

function eventScope(caller: Caller): { tenantId: string; sessionId: string; runId: string } {
  return { tenantId: caller.tenantId, sessionId: caller.sessionId, runId: caller.runId };
}
