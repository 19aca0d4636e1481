import type { Caller } from "../caller/caller.ts";
import type { AuthConfig } from "../config/index.ts";
import { unauthenticated, WayfindError } from "../errors.ts";
import { API_KEY_PREFIX, type ApiKeyStore, KEY_COPY_TRUSTED_MS, keyPrincipalId } from "./api-keys.ts";
import { JwtVerifier, MAX_TOKEN_CHARS } from "./jwt.ts";
import { CLIENT_CERTIFICATE_HEADER, certificatePrincipal } from "./mtls.ts";
import { grantPrincipal, type Principal, unauthenticatedPrincipal } from "./principal.ts";

/** Without credentials (local development only), this metadata makes a call the operator. */
export const ROLE_HEADER = "wayfind-role";
export const OPERATOR_ROLE = "admin";

/**
 * Credentials → principal, the same for every protocol: `authorization: Bearer <token>` (a wayfind
 * API key `wf_…` or a JWT), else a verified client certificate (mTLS), else, where the server allows
 * it, no credentials at all. A credential that is sent is always checked, also where none is needed.
 * Synchronous except for a JWT not verified before (its key set may need fetching).
 */
export class Authenticator {
  private readonly config: AuthConfig;
  private readonly keys: ApiKeyStore;
  private readonly jwt: JwtVerifier | undefined;
  private readonly allowUnauthenticated: boolean;
  /** One principal per key record (records are cached by the store until the database changes). */
  private readonly keyPrincipals = new WeakMap<object, Principal>();

  constructor(config: AuthConfig, keys: ApiKeyStore, allowUnauthenticated: boolean) {
    this.config = config;
    this.keys = keys;
    this.jwt = config.jwt ? new JwtVerifier(config.jwt) : undefined;
    this.allowUnauthenticated = allowUnauthenticated;
  }

  authenticate(headers: Headers, claimed: Caller, now = Date.now()): Principal | Promise<Principal> {
    const authorization = headers.get("authorization");
    if (authorization !== null) return this.bearer(authorization, now);
    const certificate = headers.get(CLIENT_CERTIFICATE_HEADER);
    if (certificate !== null && this.config.mtls) return certificatePrincipal(certificate, this.config.mtls);
    if (this.allowUnauthenticated)
      return unauthenticatedPrincipal(claimed.tenantId, headers.get(ROLE_HEADER)?.trim() === OPERATOR_ROLE);
    const ways = [
      "authorization: Bearer <API key or token>",
      ...(this.config.mtls ? ["a client certificate"] : []),
    ];
    throw unauthenticated(`this server requires credentials: send ${ways.join(" or ")}`);
  }

  /**
   * Whether a refusal of these credentials may be undone by changes this copy of the fleet's keys has
   * not applied yet (a replica: an API key created, or its copy trusted again, a moment ago): such a
   * refusal is confirmed after the replica's read fence.
   */
  refusalMayBeStale(headers: Headers): boolean {
    return (
      this.keys.shared && bearerToken(headers.get("authorization") ?? "")?.startsWith(API_KEY_PREFIX) === true
    );
  }

  private bearer(authorization: string, now: number): Principal | Promise<Principal> {
    const token = bearerToken(authorization);
    if (token === undefined)
      throw unauthenticated(
        `authorization must be "Bearer <API key or token>" of at most ${MAX_TOKEN_CHARS} characters`,
      );
    if (token.startsWith(API_KEY_PREFIX)) return this.apiKey(token, now);
    if (this.jwt && token.split(".").length === 3) return this.jwt.verify(token, now);
    throw unauthenticated(
      this.jwt
        ? "bearer token is neither a wayfind API key (wf_…) nor a JWT"
        : "bearer token is not a wayfind API key (wf_…); this server accepts no JWTs (auth.jwt)",
    );
  }

  private apiKey(secret: string, now: number): Principal {
    const key = this.keys.find(secret);
    if (!key) throw unauthenticated("API key is not known to this server");
    if (key.revokedAtMs !== undefined) throw unauthenticated(`API key ${key.id} has been revoked`);
    if (key.expiresAtMs !== undefined && key.expiresAtMs <= now)
      throw unauthenticated(`API key ${key.id} expired at ${new Date(key.expiresAtMs).toISOString()}`);
    // Fail closed: a replica cut off from the fleet's keys cannot tell whether this one was revoked.
    if (key.origin === "created" && !this.keys.trusted())
      throw new WayfindError(
        "unavailable",
        `this replica has not reached the shared database for over ${KEY_COPY_TRUSTED_MS / 1000} s, so it cannot tell whether API key ${key.id} was revoked meanwhile; retry (another replica may answer)`,
      );
    let principal = this.keyPrincipals.get(key);
    if (!principal) {
      principal = grantPrincipal(keyPrincipalId(key), key);
      this.keyPrincipals.set(key, principal);
    }
    return principal;
  }
}

/** The token of `authorization: Bearer <token>` (bounded in length), or undefined. */
function bearerToken(authorization: string): string | undefined {
  return /^Bearer +(\S+) *$/i.exec(authorization.length <= MAX_TOKEN_CHARS + 16 ? authorization : "")?.[1];
}
