/**
 * The open MCP sessions and the quotas that share them out: per credential, per tenant, and the
 * global cap (`server.mcp.max_sessions*`). A session past a quota closes the one idle longest of
 * whoever is over it, so a credential (or tenant) that opens sessions without end only ever closes
 * its own, and at the global cap the tenant holding the most gives one up.
 */

/** What the pool needs to know of a session. */
export interface PooledSession {
  readonly id: string;
  /** Who opened it (Principal.id): `key:acme/bot`, `jwt:…`, `anonymous`. */
  readonly principalId: string;
  /** The tenant it acts for; "" = none (the operator, or an anonymous caller naming none). */
  readonly tenant: string;
  lastUsedMs: number;
}

export interface SessionQuotas {
  readonly maxSessions: number;
  readonly maxSessionsPerCredential: number;
  readonly maxSessionsPerTenant: number;
}

export class SessionPool<S extends PooledSession> {
  private readonly sessions = new Map<string, S>();
  private readonly byPrincipal = new Map<string, Set<S>>();
  private readonly byTenant = new Map<string, Set<S>>();

  constructor(private readonly quotas: SessionQuotas) {}

  get size(): number {
    return this.sessions.size;
  }

  get(id: string): S | undefined {
    return this.sessions.get(id);
  }

  values(): IterableIterator<S> {
    return this.sessions.values();
  }

  add(session: S): void {
    this.sessions.set(session.id, session);
    group(this.byPrincipal, session.principalId).add(session);
    group(this.byTenant, session.tenant).add(session);
  }

  /** Takes the session out; false when it was not in (closed already). */
  delete(session: S): boolean {
    if (this.sessions.get(session.id) !== session) return false;
    this.sessions.delete(session.id);
    ungroup(this.byPrincipal, session.principalId, session);
    ungroup(this.byTenant, session.tenant, session);
    return true;
  }

  /**
   * The session to close before one more opens for `principalId` acting for `tenant`, if any: its
   * own idle longest when it holds its quota, else its tenant's when the tenant holds its quota, and
   * at the global cap the idlest of the tenant holding the most sessions.
   */
  evictionFor(principalId: string, tenant: string): S | undefined {
    const own = this.byPrincipal.get(principalId);
    if (own !== undefined && own.size >= this.quotas.maxSessionsPerCredential) return idlest(own);
    const tenants = this.byTenant.get(tenant);
    if (tenants !== undefined && tenants.size >= this.quotas.maxSessionsPerTenant) return idlest(tenants);
    if (this.sessions.size < this.quotas.maxSessions) return undefined;
    let largest: Set<S> | undefined;
    for (const sessions of this.byTenant.values())
      if (largest === undefined || sessions.size > largest.size) largest = sessions;
    return largest === undefined ? undefined : idlest(largest);
  }
}

function group<S>(groups: Map<string, Set<S>>, key: string): Set<S> {
  let members = groups.get(key);
  if (members === undefined) {
    members = new Set();
    groups.set(key, members);
  }
  return members;
}

function ungroup<S>(groups: Map<string, Set<S>>, key: string, session: S): void {
  const members = groups.get(key);
  members?.delete(session);
  if (members?.size === 0) groups.delete(key);
}

function idlest<S extends PooledSession>(sessions: ReadonlySet<S>): S {
  let found: S | undefined;
  for (const session of sessions)
    if (found === undefined || session.lastUsedMs < found.lastUsedMs) found = session;
  if (found === undefined) throw new Error("no session to close in an empty group");
  return found;
}
