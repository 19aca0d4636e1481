import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import { type ApiKeyInfo, KeyOrigin } from "../../../gen/ts/wayfind/v1/keys_pb.ts";
import { callerAs, problemOf } from "../api.ts";
import { useCall } from "../hooks.ts";
import type { PageProps } from "../page.ts";
import { Problem } from "../parts/problem.tsx";

const ROLES = ["agent", "observer", "admin"] as const;

/** API keys: who holds which roles for which tenant; create one (its secret shown once), revoke one. */
export function KeysPage({ session, tenant }: PageProps) {
  const [version, setVersion] = useState(0);
  const keys = useCall(
    (signal) => session.api.keys.listApiKeys({ caller: callerAs(tenant) }, { signal }).then((r) => r.keys),
    [tenant, version],
  );
  const [problem, setProblem] = useState<string | undefined>();
  const [secret, setSecret] = useState<{ id: string; value: string } | undefined>();

  /** A key id is unique within its tenant only: the tenant says whose key it is. */
  const revoke = async (id: string, keyTenant: string) => {
    try {
      await session.api.keys.revokeApiKey({ caller: callerAs(tenant), id, tenantId: keyTenant });
      setProblem(undefined);
      setVersion((v) => v + 1);
    } catch (error) {
      setProblem(problemOf(error));
    }
  };

  return (
    <>
      <CreateKey
        {...{ session, tenant }}
        onCreated={(id, value) => {
          setSecret({ id, value });
          setVersion((v) => v + 1);
        }}
      />
      {secret ? (
        <section class="panel secret" aria-label="New key">
          <p>
            The secret of key <strong>{secret.id}</strong>. Copy it now: it is shown this once and never
            stored.
          </p>
          <output data-secret>{secret.value}</output>{" "}
          <button type="button" onClick={() => setSecret(undefined)}>
            I have copied it
          </button>
        </section>
      ) : null}
      <Problem text={problem ?? keys.problem} />
      <table class="grid" aria-label="Keys">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Tenant</th>
            <th scope="col">Roles</th>
            <th scope="col">Created</th>
            <th scope="col">State</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.value?.map((key) => (
            <tr key={`${key.tenantId}/${key.id}`} data-key={key.id}>
              <td>{key.id}</td>
              <td>{key.tenantId || "(operator)"}</td>
              <td>{key.roles.join(", ")}</td>
              <td>{key.origin === KeyOrigin.CONFIG ? "config file" : day(key.createdAt)}</td>
              <td data-state>{stateOf(key)}</td>
              <td>
                {key.origin !== KeyOrigin.CONFIG && stateOf(key) === "active" ? (
                  <button
                    type="button"
                    onClick={() => revoke(key.id, key.tenantId)}
                    aria-label={`Revoke ${key.id}`}
                  >
                    Revoke
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {keys.value?.length === 0 ? (
        <p class="hint" data-empty="keys">
          No API keys yet{tenant ? ` for tenant ${tenant}` : ""}. Create one above, or on the server's machine
          with <code>wayfind keys create --tenant T --role agent</code>; its secret is shown once.
        </p>
      ) : null}
    </>
  );
}

function CreateKey({
  session,
  tenant,
  onCreated,
}: PageProps & { onCreated: (id: string, secret: string) => void }) {
  const [id, setId] = useState("");
  const [forTenant, setForTenant] = useState(tenant);
  const [roles, setRoles] = useState<readonly string[]>(["agent"]);
  const [days, setDays] = useState("");
  const [problem, setProblem] = useState<string | undefined>();

  const create = async (event: Event) => {
    event.preventDefault();
    try {
      const answer = await session.api.keys.createApiKey({
        caller: callerAs(tenant),
        id,
        tenantId: session.operator ? forTenant : "",
        roles: [...roles],
        expiry: days
          ? { case: "expiresInSeconds", value: BigInt(Math.round(Number(days) * 86_400)) }
          : { case: undefined },
      });
      setProblem(undefined);
      setId("");
      onCreated(answer.key?.id ?? id, answer.secret);
    } catch (error) {
      setProblem(problemOf(error));
    }
  };

  return (
    <section class="panel" aria-label="Create a key">
      <h2>Create a key</h2>
      <form onSubmit={create} class="search-form">
        <label>
          Id{" "}
          <input
            value={id}
            placeholder="random"
            onInput={(event) => setId(event.currentTarget.value.trim())}
          />
        </label>
        {session.operator ? (
          <label>
            For tenant{" "}
            <input value={forTenant} onInput={(event) => setForTenant(event.currentTarget.value.trim())} />
          </label>
        ) : null}
        <fieldset class="types">
          <legend>Roles</legend>
          {ROLES.map((role) => (
            <label key={role}>
              <input
                type="checkbox"
                checked={roles.includes(role)}
                onChange={(event) => {
                  const on = event.currentTarget.checked;
                  setRoles((now) => (on ? [...now, role] : now.filter((r) => r !== role)));
                }}
              />{" "}
              {role}
            </label>
          ))}
        </fieldset>
        <label>
          Expires in days{" "}
          <input
            type="number"
            min={1}
            value={days}
            placeholder="never"
            onInput={(e) => setDays(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Create</button>
      </form>
      <Problem text={problem} />
    </section>
  );
}

function stateOf(key: ApiKeyInfo): "active" | "revoked" | "expired" {
  if (key.revokedAt) return "revoked";
  if (key.expiresAt && timestampDate(key.expiresAt).getTime() <= Date.now()) return "expired";
  return "active";
}

function day(time: ApiKeyInfo["createdAt"]): string {
  return time ? timestampDate(time).toISOString().slice(0, 10) : "–";
}
