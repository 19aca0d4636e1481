import type { Principal, Role } from "../caller/caller.ts";
import type { GrantConfig } from "../config/index.ts";

export type { Principal } from "../caller/caller.ts";

/** The principal a credential (API key, token, certificate) grants. Admin bound to no tenant = operator. */
export function grantPrincipal(
  id: string,
  grant: GrantConfig & { readonly userId?: string; readonly expiresAtMs?: number | undefined },
): Principal {
  const roles = new Set<Role>(grant.roles);
  return {
    id,
    tenantId: grant.tenant,
    operator: grant.tenant === "" && roles.has("admin"),
    roles,
    projects: grant.projects,
    entitlements: grant.entitlements,
    userId: grant.userId ?? "",
    expiresAtMs: grant.expiresAtMs,
  };
}

const EVERY_ROLE: ReadonlySet<Role> = new Set<Role>(["agent", "observer", "admin"]);

/**
 * A call without credentials where the server allows them (local development): the CallerContext is
 * trusted as sent, as is the `wayfind-role: admin` metadata that makes it the operator.
 */
export function unauthenticatedPrincipal(tenantId: string, operator: boolean): Principal {
  return {
    id: "anonymous",
    tenantId,
    operator,
    roles: EVERY_ROLE,
    projects: [],
    entitlements: undefined,
    userId: "",
  };
}
