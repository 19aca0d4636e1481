import { TenantOrigin, TenantOriginSchema } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { enumLabel } from "./format.ts";
import { everyPage, useCall } from "./hooks.ts";
import type { Session } from "./session.ts";

/** Listings past this many tenants are cut (the field still takes any name). */
const MAX_LISTED = 5_000;

/**
 * The operator's choice of tenant to look as: the tenants the server knows of (ListTenants: keys,
 * visibility rules, usage, events) to pick from, or any name typed. Usage, keys and events belong to
 * tenants, so an operator who picks none sees only what was done without a tenant.
 */
export function TenantPicker({
  session,
  tenant,
  onPick,
}: {
  session: Session;
  tenant: string;
  onPick: (tenant: string) => void;
}) {
  const known = useCall(
    (signal) =>
      everyPage(
        (pageToken) =>
          session.api.tools
            .listTenants({ pageSize: 1_000, pageToken }, { signal })
            .then((page) => ({ items: page.tenants, nextPageToken: page.nextPageToken })),
        MAX_LISTED,
      ),
    [],
  );
  const tenants = known.value ?? [];
  return (
    <label class="tenant">
      As tenant{" "}
      <input
        value={tenant}
        list="known-tenants"
        placeholder={tenants.length > 0 ? `(none) · ${tenants.length} known` : "(none)"}
        onChange={(event) => onPick(event.currentTarget.value.trim())}
      />
      <datalist id="known-tenants">
        {tenants.map((t) => (
          <option key={t.tenantId} value={t.tenantId}>
            {seenIn(t.seenIn)}
          </option>
        ))}
      </datalist>
    </label>
  );
}

/** "usage, events": where the server saw a tenant. */
function seenIn(origins: readonly TenantOrigin[]): string {
  return origins
    .filter((origin) => origin !== TenantOrigin.UNSPECIFIED)
    .map((origin) => enumLabel(TenantOriginSchema, origin))
    .join(", ");
}
