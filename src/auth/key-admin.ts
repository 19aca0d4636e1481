import { authorizeKeyGrant, keyTenantFor } from "../caller/authorize.ts";
import { isRole, type Principal, ROLES, type Role } from "../caller/caller.ts";
import { type FieldViolation, invalidArgument, notFound, permissionDenied, quoteInput } from "../errors.ts";
import { LIMITS, type Limit, sizeProblem } from "../limits.ts";
import { type ApiKey, isKeyId, MAX_KEY_EXPIRY_MS } from "./api-keys.ts";
import type { KeyBook } from "./key-book.ts";

/** A key as an admin asks for it over the API (CreateApiKey), before it is checked. */
export interface KeyRequest {
  /** "" = a random id. */
  readonly id: string;
  /** "" = the tenant the caller acts for. */
  readonly tenant: string;
  readonly roles: readonly string[];
  readonly projects: readonly string[];
  readonly entitlements: readonly string[];
  /** undefined = never expires. */
  readonly expiry: { readonly inSeconds: number } | { readonly atMs: number } | undefined;
}

/**
 * API keys as an admin manages them over the API (KeyService): its own tenant's, or every tenant's
 * for the operator (src/caller/authorize.ts decides whose), in the book `wayfind keys` also uses (the
 * fleet's, on replicas).
 * Key ids are unique within a tenant: another tenant's key is answered exactly as a missing one, and
 * its id is as free as any other.
 */
export class KeyAdmin {
  constructor(private readonly store: KeyBook) {}

  /** The keys the principal manages, config-declared first, then by creation. */
  async list(principal: Principal): Promise<ApiKey[]> {
    const tenant = keyTenantFor(principal);
    const keys = await this.store.list();
    return tenant === undefined ? keys : keys.filter((key) => key.tenant === tenant);
  }

  /**
   * Creates a key; the secret is returned here once. It grants no more than the principal's own
   * credential (roles, projects, entitlements) and expires no later: without an expiry asked for, a
   * key created by a credential that expires expires with it.
   */
  async create(
    principal: Principal,
    request: KeyRequest,
    now = Date.now(),
  ): Promise<{ key: ApiKey; secret: string }> {
    const tenant = request.tenant || principal.tenantId;
    const roles = checkRequest(request, tenant, now);
    const expiresAtMs = expiresAtMsOf(request.expiry, now) ?? principal.expiresAtMs;
    authorizeKeyGrant(principal, {
      tenant,
      roles,
      projects: request.projects,
      entitlements: request.entitlements,
      expiresAtMs,
    });
    return this.store.create(
      {
        id: request.id || undefined,
        tenant,
        roles,
        projects: request.projects,
        entitlements: request.entitlements,
        expiresAtMs,
      },
      now,
    );
  }

  /**
   * Revokes a key the principal manages; false when it was revoked already. `tenant` says whose key
   * (undefined = the principal's tenant, or for the operator the one tenant with a key of this id).
   */
  async revoke(principal: Principal, id: string, tenant: string | undefined): Promise<boolean> {
    if (id === "")
      throw invalidArgument("id is required: the id of the key to revoke (ListApiKeys lists them)");
    const missing = () => notFound(`no key with id ${quoteInput(id)}; ListApiKeys lists the keys you manage`);
    const own = keyTenantFor(principal);
    if (own !== undefined) {
      if (tenant !== undefined && tenant !== own)
        throw permissionDenied(
          `tenant_id ${quoteInput(tenant)} is not your tenant: an admin bound to a tenant revokes its own keys only (leave tenant_id unset)`,
        );
      if ((await this.store.get(own, id)) === undefined) throw missing();
      return this.store.revoke(own, id);
    }
    const keys = (await this.store.withId(id)).filter((key) => tenant === undefined || key.tenant === tenant);
    const [key, ...others] = keys;
    if (key === undefined) throw missing();
    if (others.length > 0)
      throw invalidArgument(
        `keys of several tenants have id ${quoteInput(id)} (${keys.map((k) => quoteInput(k.tenant)).join(", ")}); say whose with tenant_id`,
        [{ field: "tenant_id", description: "names which tenant's key to revoke" }],
      );
    return this.store.revoke(key.tenant, id);
  }
}

/**
 * Every problem of the request as a field violation (the message names the first); its roles when
 * there is none.
 */
function checkRequest(request: KeyRequest, tenant: string, now: number): Role[] {
  const problems: FieldViolation[] = [];
  /** Whether `value` is within the row's range; records the problem when not. */
  const size = (field: string, row: Limit, value: number): boolean => {
    const description = sizeProblem({ ...row, field }, value);
    if (description !== undefined) problems.push({ field, description });
    return description === undefined;
  };
  const problem = (field: string, description: string) =>
    problems.push({ field, description: `${field} ${description}` });

  size("id", LIMITS.keyId, request.id.length);
  if (request.id !== "" && request.id.length <= LIMITS.keyId.max && !isKeyId(request.id))
    problem("id", `${quoteInput(request.id)} may hold only letters, digits, '.', '_' and '-'`);
  size("tenant_id", LIMITS.keyTenantId, request.tenant.length);
  const roles = request.roles.filter(isRole);
  if (size("roles", LIMITS.keyRoles, request.roles.length))
    for (const [i, role] of request.roles.entries())
      if (!isRole(role)) problem(`roles[${i}]`, `${quoteInput(role)} is not a role; use ${ROLES.join(", ")}`);
  if (tenant === "" && request.roles.length > 0 && !roles.includes("admin"))
    problem(
      "tenant_id",
      "is required: name the tenant the key acts for (only a key with role admin may have none: an operator key)",
    );
  for (const [field, count, each, values] of [
    ["projects", LIMITS.keyProjects, LIMITS.keyProject, request.projects],
    ["entitlements", LIMITS.keyEntitlements, LIMITS.keyEntitlement, request.entitlements],
  ] as const) {
    // Values are checked only in a list of allowed length (as roles are), so the problems stay few.
    if (size(field, count, values.length))
      for (const [i, value] of values.entries()) size(`${field}[${i}]`, each, value.length);
  }
  const { expiry } = request;
  if (expiry !== undefined && "inSeconds" in expiry)
    size("expires_in_seconds", LIMITS.keyExpiresInSeconds, expiry.inSeconds);
  else if (expiry !== undefined && !(expiry.atMs > now && expiry.atMs <= MAX_KEY_EXPIRY_MS))
    problem(
      "expires_at",
      expiry.atMs > now
        ? `must be at the latest ${new Date(MAX_KEY_EXPIRY_MS).toISOString()} (the latest time every encoding of the API carries)`
        : "must be in the future",
    );

  const [first] = problems;
  if (first !== undefined) {
    const rest = problems.length - 1;
    const more = rest > 0 ? ` (and ${rest} more in the details)` : "";
    throw invalidArgument(`invalid key: ${first.description}${more}`, problems);
  }
  return roles;
}

function expiresAtMsOf(expiry: KeyRequest["expiry"], now: number): number | undefined {
  if (expiry === undefined) return undefined;
  return "inSeconds" in expiry ? now + expiry.inSeconds * 1000 : expiry.atMs;
}
