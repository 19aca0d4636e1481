/**
 * Who is asking, as resolved once per call by the server (DESIGN.md §3). Domain code receives this,
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
