import { permissionDenied as denied, quoteInput } from "../errors.ts";
import { holdsRole, type Principal, type Role } from "./caller.ts";

/**
 * THE one place that decides what a principal may write or observe beyond its own tenant; handlers
 * ask here and never test roles themselves. Three kinds of principal:
 * - operator  — global writes (tools, GLOBAL skill packs), every source, every tenant's events and
 *               API keys;
 * - tenant    — writes and observes its own tenant only (plus global sources), keys included;
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

/** Only the operator lists the tenants: a tenant's credential never learns of the others. */
export function authorizeTenantListing(principal: Principal): void {
  if (!principal.operator) throw denied(`listing the tenants needs ${AS_OPERATOR}`);
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

/**
 * Whose API keys a principal manages (KeyService): undefined = every tenant's (the operator), else its
 * own tenant's. An anonymous caller manages none.
 */
export function keyTenantFor(principal: Principal): string | undefined {
  if (principal.operator) return undefined;
  if (principal.tenantId !== "") return principal.tenantId;
  throw denied(`managing API keys needs caller.tenant_id (that tenant's keys) or ${AS_OPERATOR}`);
}

/** What a key to be created grants, as far as who may create it is concerned. */
export interface KeyGrant {
  readonly tenant: string;
  readonly roles: readonly Role[];
  readonly projects: readonly string[];
  readonly entitlements: readonly string[];
  /** undefined = never. */
  readonly expiresAtMs: number | undefined;
}

/**
 * A key is created for the tenant the principal manages (any for the operator) and grants no more
 * than the principal's own credential holds: roles it holds, projects and entitlements that only
 * narrow its own (as a CallerContext may), and an expiry no later than its own. Without credentials
 * (local development) anything goes for the caller's tenant.
 */
export function authorizeKeyGrant(principal: Principal, grant: KeyGrant): void {
  const own = keyTenantFor(principal);
  if (own !== undefined && grant.tenant !== own)
    throw denied(
      `tenant_id ${quoteInput(grant.tenant)} is not your tenant: an admin bound to a tenant creates keys for its own only (leave tenant_id empty); another tenant's keys need ${AS_OPERATOR}`,
    );
  const unheldRole = grant.roles.find((role) => !holdsRole(principal.roles, role));
  if (unheldRole !== undefined)
    throw denied(`roles names ${quoteInput(unheldRole)}, a role your credential does not hold`);
  const expires = principal.expiresAtMs;
  if (expires !== undefined && (grant.expiresAtMs === undefined || grant.expiresAtMs > expires))
    throw denied(
      `your credential expires at ${new Date(expires).toISOString()}: a key you create may not outlive it; ask for an expiry no later than that`,
    );
  const held = principal.entitlements;
  if (principal.operator || held === undefined) return;
  const allowed = principal.projects;
  if (allowed.length > 0) {
    if (grant.projects.length === 0)
      throw denied("your credential is limited to projects: list in projects one or more of them");
    const foreign = grant.projects.find((project) => !allowed.includes(project));
    if (foreign !== undefined)
      throw denied(`projects names ${quoteInput(foreign)}, which is not one of your credential's projects`);
  }
  const unheld = grant.entitlements.find((entitlement) => !held.includes(entitlement));
  if (unheld !== undefined)
    throw denied(`entitlements names ${quoteInput(unheld)}, which your credential does not hold`);
}
