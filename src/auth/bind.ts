import { type Caller, holdsRole, type Principal } from "../caller/caller.ts";
import { permissionDenied as denied, quoteInput } from "../errors.ts";
import { METHOD_ROLES } from "./roles.ts";

/** What a call may do, once its principal is known: its role for the method, and its bound caller. */
export interface Admission {
  /** The CallerContext with tenant, project, user and entitlements the credential allows. */
  readonly caller: Caller;
  /** The principal acting for `caller.tenantId` (the operator may act for any tenant). */
  readonly principal: Principal;
}

/**
 * Admits a call: the principal holds the method's role (roles.ts), and the CallerContext it claims
 * stays within its credential. The credential decides the tenant: a context naming another tenant is
 * refused, never rewritten. Project, user and entitlements may only narrow what the credential holds.
 */
export function admitCall(method: string, principal: Principal, claimed: Caller): Admission {
  const role = METHOD_ROLES[method];
  if (role === undefined) throw denied(`${method} has no role declared; it is not served`);
  if (!holdsRole(principal.roles, role))
    throw denied(
      `${method.slice(method.lastIndexOf("/") + 1)} needs the ${role} role; this credential has ${describeRoles(principal)}`,
    );
  return admitted(principal, claimed);
}

/**
 * Admits a request of wayfind's MCP endpoint, as admitCall admits an RPC: what a session does —
 * find, read and call tools, get prompts, read resources — is an agent's work, so the endpoint
 * needs the agent role (docs/mcp.md "Who may connect"); the caller is bound as for any RPC.
 */
export function admitMcpRequest(principal: Principal, claimed: Caller): Admission {
  if (!holdsRole(principal.roles, "agent"))
    throw denied(
      `wayfind's MCP endpoint needs the agent role; this credential has ${describeRoles(principal)} ` +
        "(observers read tool sources, usage and events over the API and in the console)",
    );
  return admitted(principal, claimed);
}

/** The admission of an authorized principal: its caller bound, and the principal acting for its tenant. */
function admitted(principal: Principal, claimed: Caller): Admission {
  const caller = bindCaller(principal, claimed);
  return {
    caller,
    principal:
      caller.tenantId === principal.tenantId ? principal : { ...principal, tenantId: caller.tenantId },
  };
}

function bindCaller(principal: Principal, claimed: Caller): Caller {
  // Without credentials the context is trusted as sent; the operator may act for any tenant.
  if (principal.entitlements === undefined || principal.operator) return claimed;
  if (claimed.tenantId !== "" && claimed.tenantId !== principal.tenantId)
    throw denied(
      `caller.tenant_id ${quoteInput(claimed.tenantId)} is not this credential's tenant; leave it empty or send the credential's own`,
    );
  return {
    ...claimed,
    tenantId: principal.tenantId,
    projectId: boundProject(principal, claimed.projectId),
    userId: boundUser(principal, claimed.userId),
    entitlements: boundEntitlements(principal.entitlements, claimed.entitlements),
  };
}

function boundProject(principal: Principal, claimed: string): string {
  const allowed = principal.projects;
  if (allowed.length === 0 || allowed.includes(claimed)) return claimed;
  if (claimed === "" && allowed.length === 1) return allowed[0] ?? "";
  throw denied(
    claimed === ""
      ? "this credential is limited to projects; send caller.project_id naming one of them"
      : `caller.project_id ${quoteInput(claimed)} is not one of this credential's projects`,
  );
}

function boundUser(principal: Principal, claimed: string): string {
  if (principal.userId === "" || claimed === "") return principal.userId || claimed;
  if (claimed !== principal.userId)
    throw denied(
      `caller.user_id ${quoteInput(claimed)} is not the user this credential names; leave it empty`,
    );
  return claimed;
}

/** The claimed entitlements if all are held (narrowing), the held ones if none are claimed. */
function boundEntitlements(held: readonly string[], claimed: readonly string[]): readonly string[] {
  if (claimed.length === 0) return held;
  const unheld = claimed.find((entitlement) => !held.includes(entitlement));
  if (unheld !== undefined)
    throw denied(`caller.entitlements names ${quoteInput(unheld)}, which this credential does not hold`);
  return claimed;
}

function describeRoles(principal: Principal): string {
  return principal.roles.size === 0 ? "no role" : `role ${[...principal.roles].join(", ")}`;
}
