import type { ToolAccess } from "../access/index.ts";
import type { Caller } from "../caller/caller.ts";
import type { Tool } from "../discovery/types.ts";
import type { ActivateOptions, ActivationResult, ActivationStore } from "./store.ts";

/** Finds the tool a requested name means (canonical name, alias, variant) or undefined. */
export type ResolveTool = (name: string) => Tool | undefined;

export interface CheckedActivationResult extends ActivationResult {
  /** Requested names that are unknown or not visible to the caller — indistinguishable on purpose. */
  readonly notFound: readonly string[];
}

/**
 * Activation through access control: each requested name is resolved, re-checked with
 * `access.canActivate` (whatever the resolver did), and only the canonical names of admitted tools
 * reach the store. Refusals emit `tool_activation_denied` with reason `unavailable` and a count, never
 * a name. A caller may only see its own requested names echoed back in `notFound`.
 */
export async function activateVisible(
  deps: { readonly store: ActivationStore; readonly access: ToolAccess; readonly resolve: ResolveTool },
  caller: Caller,
  names: readonly string[],
  options: ActivateOptions,
): Promise<CheckedActivationResult> {
  const admitted: string[] = [];
  const notFound: string[] = [];
  for (const name of new Set(names)) {
    const tool = deps.resolve(name);
    if (tool !== undefined && deps.access.canActivate(tool)) admitted.push(tool.name);
    else notFound.push(name);
  }
  if (notFound.length > 0) deps.store.deny(caller, "unavailable", notFound.length);
  if (admitted.length === 0) return { activated: [], alreadyActive: [], notFound };
  return { ...(await deps.store.activate(caller, admitted, options)), notFound };
}
