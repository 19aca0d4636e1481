import { permissionDenied as denied } from "../errors.ts";
import type { Principal } from "./caller.ts";

/**
 * THE one place that decides what a principal may write or observe beyond its own tenant; handlers
 * ask here and never test roles themselves. Three kinds of principal:
 * - operator  — global writes (tools, GLOBAL skill packs), every source, every tenant's events;
 * - tenant    — writes and observes its own tenant only (plus global sources);
 * - anonymous — no tenant, not the operator: no writes, global sources, tenant-less events only.
 */

const AS_OPERATOR = "the operator (an admin credential bound to no tenant)";

/** Owner of global (operator) state: config catalogs, MCP servers, operator registrations. */
const GLOBAL_OWNER = "";

/**
 * Who owns the tools a RegisterTools call writes: the caller's tenant (also when the operator acts
 * for one), else global for the operator. An anonymous caller may not register.
 */
export function toolOwnerFor(principal: Principal): string {
  if (principal.tenantId !== "") return principal.tenantId;
  if (principal.operator) return GLOBAL_OWNER;
  throw denied(`registering tools needs caller.tenant_id (tools for that tenant) or ${AS_OPERATOR}`);
}

/** Global skill packs are served to every tenant: only the operator may load them. */
export function authorizeSkillPackScope(principal: Principal, kind: "project" | "tenant" | "global"): void {
  if (kind === "global" && !principal.operator)
    throw denied(`loading a GLOBAL skill pack needs ${AS_OPERATOR}; tenants load TENANT or PROJECT packs`);
}

/** What a principal may see of ListToolSources. */
export interface SourceListing {
  /** Whose sources are listed: every owner's for the operator, else the global ones and its own. */
  readonly owners: (owner: string) => boolean;
  /**
   * The operator sees every tool counted and every error. Anyone else sees only the tools it may see
   * counted, no global source none of whose tools it sees (hidden = missing), and no error text
   * (commands and URLs are the operator's diagnostics).
   */
  readonly everything: boolean;
}

export function sourceListingFor(principal: Principal): SourceListing {
  if (principal.operator) return { owners: () => true, everything: true };
  return {
    owners: (owner) => owner === GLOBAL_OWNER || owner === principal.tenantId,
    everything: false,
  };
}

/**
 * The tenant a watch stream is confined to: undefined = every tenant (operator only). A tenant sees
 * its own events; an anonymous caller sees only events emitted without a tenant ("").
 */
export function watchedTenant(principal: Principal, requested: string): string | undefined {
  if (principal.operator) return requested === "" ? undefined : requested;
  if (requested !== "" && requested !== principal.tenantId)
    throw denied(
      `filter.tenant_id must be empty or the caller's own tenant; watching another tenant needs ${AS_OPERATOR}`,
    );
  return principal.tenantId;
}
