import { invalidArgument } from "../errors.ts";

/** Where a tenant was seen, in the order ListTenants reports them. */
const TENANT_ORIGINS = ["api_key", "visibility_rule", "usage", "events"] as const;
export type TenantOrigin = (typeof TENANT_ORIGINS)[number];

/** Every place tenants are named, each answering "the tenants after X, in order, at most N". */
export type TenantLookups = Readonly<
  Record<TenantOrigin, (after: string, limit: number) => readonly string[] | Promise<readonly string[]>>
>;

export interface TenantPage {
  readonly tenants: readonly { readonly id: string; readonly seenIn: readonly TenantOrigin[] }[];
  /** Empty on the last page. */
  readonly nextPageToken: string;
}

/** Longest page token accepted: a tenant id of any source fits well within it. */
const MAX_TOKEN_CHARACTERS = 1_024;

/**
 * The tenants the server knows of (ListTenants, for the operator): the union of every lookup, in
 * order of id, one page at a time. Each lookup is asked for one more than a page, so the cost grows
 * with the page, never with the rows behind it.
 */
export async function tenantPage(
  lookups: TenantLookups,
  pageSize: number,
  pageToken: string,
): Promise<TenantPage> {
  const after = afterOf(pageToken);
  const seen = new Map<string, TenantOrigin[]>();
  for (const origin of TENANT_ORIGINS)
    for (const id of await lookups[origin](after, pageSize + 1))
      if (id !== "" && id > after) seen.set(id, [...(seen.get(id) ?? []), origin]);
  const ids = [...seen.keys()].sort();
  const page = ids.slice(0, pageSize);
  const last = page.at(-1);
  return {
    tenants: page.map((id) => ({ id, seenIn: seen.get(id) ?? [] })),
    nextPageToken: ids.length > pageSize && last !== undefined ? Buffer.from(last).toString("base64url") : "",
  };
}

/** The tenants of a sorted list after `after`, at most `limit` (for the lookups held in memory). */
export function idsAfter(ids: Iterable<string>, after: string, limit: number): string[] {
  return [...new Set(ids)]
    .filter((id) => id > after)
    .sort()
    .slice(0, limit);
}

function afterOf(pageToken: string): string {
  if (pageToken.length > MAX_TOKEN_CHARACTERS || !/^[A-Za-z0-9_-]*$/.test(pageToken))
    throw invalidArgument("page_token is not one ListTenants returned");
  return Buffer.from(pageToken, "base64url").toString();
}
