import { invalidArgument, quoteInput } from "../errors.ts";
import { SCOPE_KINDS, type SkillScope } from "./model.ts";

/** `value` if it is one of `allowed`; undefined when unset; otherwise INVALID_ARGUMENT naming the choices. */
export function oneOf<T extends string>(
  field: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined || value === "") return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw invalidArgument(`${field} must be one of ${allowed.join(", ")}, got ${quoteInput(value)}`);
  return value as T;
}

/** A scope with exactly the ids its kind needs (others blanked), or INVALID_ARGUMENT saying which is missing. */
export function checkScope(scope: SkillScope): SkillScope {
  const kind = oneOf("scope.kind", scope?.kind, SCOPE_KINDS);
  if (kind === "global") return { kind, tenantId: "", projectId: "" };
  if (kind === "tenant") {
    if (!scope.tenantId) throw invalidArgument("tenant scope needs a tenant_id");
    return { kind, tenantId: scope.tenantId, projectId: "" };
  }
  if (kind === "project") {
    if (!scope.tenantId || !scope.projectId)
      throw invalidArgument("project scope needs a tenant_id and a project_id");
    return { kind, tenantId: scope.tenantId, projectId: scope.projectId };
  }
  throw invalidArgument(`scope.kind must be one of ${SCOPE_KINDS.join(", ")}`);
}
