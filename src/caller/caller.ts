/**
 * Who is asking, as resolved once per call by the server (docs/design.md §3). Domain code receives this,
 * never transport headers. The context is trusted for now: run wayfind behind an authenticated boundary.
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

/**
 * Who acts, resolved once per call next to the Caller (src/server/pipeline.ts). Today the tenant is
 * the trusted `caller.tenant_id` and the operator role the trusted metadata `wayfind-role: admin`;
 * issue 15 derives both from credentials in that same one place. What a principal may do is decided
 * in src/caller/authorize.ts.
 */
export interface Principal {
  /** The tenant the call acts for; "" = none. */
  readonly tenantId: string;
  /** The operator (docs/design.md §8 role `admin`): writes global state and observes every tenant. */
  readonly operator: boolean;
}

export const ANONYMOUS_PRINCIPAL: Principal = { tenantId: "", operator: false };
