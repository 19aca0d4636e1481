/**
 * Who is asking, as resolved once per call by the server (docs/design.md §3). Domain code receives this,
 * never transport headers. Its tenant, project, user and entitlements are bound to the credentials
 * (src/auth/bind.ts); without credentials (local development) it is trusted as sent.
 */
export interface Caller {
  readonly tenantId: string;
  readonly projectId: string;
  readonly userId: string;
  readonly sessionId: string;
  readonly runId: string;
  readonly entitlements: readonly string[];
  /** Optional narrowing: glob patterns of tool names; empty = no narrowing. Can only shrink what is visible. */
  readonly narrowToTools: readonly string[];
  /**
   * Who acts, as learning counts it (Principal.id: `key:<id>`, `jwt:<sub>`, …); absent without
   * credentials, when learning counts the caller's user. Never a secret.
   */
  readonly actor?: string;
}

export const ANONYMOUS_CALLER: Caller = {
  tenantId: "",
  projectId: "",
  userId: "",
  sessionId: "",
  runId: "",
  entitlements: [],
  narrowToTools: [],
};

/** The caller's tenant, session and run as an event names them (absent when empty). */
export function eventScopeOf(caller: Caller): { tenantId?: string; sessionId?: string; runId?: string } {
  return {
    tenantId: caller.tenantId || undefined,
    sessionId: caller.sessionId || undefined,
    runId: caller.runId || undefined,
  };
}

/** What a principal may do, per RPC (src/auth/roles.ts). `admin` may do everything. */
export type Role = "agent" | "observer" | "admin";
export const ROLES: readonly Role[] = ["agent", "observer", "admin"];

export function isRole(name: string): name is Role {
  return (ROLES as readonly string[]).includes(name);
}

/** Whether `roles` may do what needs `needed` (an RPC, granting a role): `admin` may do everything. */
export function holdsRole(roles: ReadonlySet<Role>, needed: Role): boolean {
  return roles.has(needed) || roles.has("admin");
}

/**
 * Who acts, resolved once per call from its credentials (src/auth/authenticate.ts) and bound to the
 * call's Caller (src/auth/bind.ts) in src/server/pipeline.ts. What a principal may write or observe
 * beyond its own tenant is decided in src/caller/authorize.ts.
 */
export interface Principal {
  /** Who, for logs, audit and limits: `key:<id>`, `jwt:<sub>`, `cert:<name>`, `anonymous`; never a secret. */
  readonly id: string;
  /** The tenant the call acts for; "" = none. */
  readonly tenantId: string;
  /** The operator (role `admin` bound to no tenant): writes global state and observes every tenant. */
  readonly operator: boolean;
  readonly roles: ReadonlySet<Role>;
  /** Projects the credential may act in; empty = any project of its tenant. */
  readonly projects: readonly string[];
  /** Entitlements the credential holds; undefined = whatever the caller claims (no credentials). */
  readonly entitlements: readonly string[] | undefined;
  /** The user the credential names; "" = whichever the caller says. */
  readonly userId: string;
  /** When the credential stops being accepted (epoch ms): a key's expiry, a token's `exp`; absent = never. */
  readonly expiresAtMs?: number | undefined;
}

export const ANONYMOUS_PRINCIPAL: Principal = {
  id: "anonymous",
  tenantId: "",
  operator: false,
  roles: new Set(),
  projects: [],
  entitlements: undefined,
  userId: "",
};
