import { type Api, Code, ConnectError, connectApi } from "./api.ts";

/** What the signed-in credential may do, as the server answers it (never guessed from the key). */
export interface Session {
  readonly api: Api;
  /** A key was given (false: a loopback server that serves calls without credentials). */
  readonly withKey: boolean;
  readonly agent: boolean;
  readonly observer: boolean;
  readonly admin: boolean;
  /** May look as any tenant (the operator); otherwise every answer is the credential's own tenant's. */
  readonly operator: boolean;
}

/** A sign-in the person must fix: no credential where one is needed, or a wrong, expired or revoked one. */
export class SignInError extends Error {}

const STORED_KEY = "wayfind.console.key";

/** The key of this tab's sign-in (session storage: gone when the tab closes, never shared with others). */
export function storedKey(): string | undefined {
  return sessionStorage.getItem(STORED_KEY) ?? undefined;
}

export function forgetKey(): void {
  sessionStorage.removeItem(STORED_KEY);
}

/**
 * Signs in with `key` (undefined: try without one). The roles come from asking the server: one cheap
 * call per role, each answered or denied by the same check every client meets.
 */
export async function signIn(key: string | undefined): Promise<Session> {
  const api = connectApi(key);
  // Only the operator may name another tenant than its credential's: the last two ask as another.
  const probe = { caller: { tenantId: "wayfind-console-probe" } };
  const [agent, observer, admin, agentElsewhere, observerElsewhere] = await Promise.all([
    allowed(api.tools.listTools({ pageSize: 1 })),
    allowed(api.tools.listToolSources({})),
    allowed(api.keys.listApiKeys({})),
    allowed(api.tools.listTools({ ...probe, pageSize: 1 })),
    allowed(api.tools.listToolSources(probe)),
  ]);
  if (!agent && !observer) throw new SignInError("this credential has no role the console can use");
  const operator = agentElsewhere || observerElsewhere;
  if (key) sessionStorage.setItem(STORED_KEY, key);
  return { api, withKey: key !== undefined, agent, observer, admin, operator };
}

/** True when the call was answered, false when its role was denied; a credential problem throws. */
async function allowed(call: Promise<unknown>): Promise<boolean> {
  try {
    await call;
    return true;
  } catch (error) {
    const problem = ConnectError.from(error);
    if (problem.code === Code.PermissionDenied) return false;
    if (problem.code === Code.Unauthenticated) throw new SignInError(problem.rawMessage);
    throw new SignInError(`wayfind did not answer (${problem.rawMessage}); is the server running?`);
  }
}
