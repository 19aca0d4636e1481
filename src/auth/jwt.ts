import { createPublicKey } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";
import { isRole } from "../caller/caller.ts";
import type { JwtConfig } from "../config/index.ts";
import { unauthenticated, WayfindError } from "../errors.ts";
import { LruCache } from "../lru.ts";
import { grantPrincipal, type Principal } from "./principal.ts";

/** Longest token accepted: real ones are 1-2 KB; anything far bigger is an attack on the parser. */
export const MAX_TOKEN_CHARS = 8192;
/**
 * Verified tokens remembered (until each expires, the least recently used dropped first), so a token
 * is verified once, not per call.
 */
const CACHE_ENTRIES = 10_000;

/**
 * Verifies JWT / OIDC bearer tokens with `jose`: signature against a JWKS (fetched and cached, refetched
 * on an unknown `kid`) or static public keys; `iss`, `aud`, `exp` (required), `nbf` with bounded clock
 * skew; asymmetric algorithms only (so neither `alg: none` nor HS/RS key confusion can pass). Claims
 * map to a Principal as the config says. A verified token is cached until it expires.
 */
export class JwtVerifier {
  private readonly config: JwtConfig;
  private readonly keys: JWTVerifyGetKey;
  private readonly verified = new LruCache<string, { principal: Principal; expiresAtMs: number }>(
    CACHE_ENTRIES,
  );

  constructor(config: JwtConfig) {
    this.config = config;
    this.keys = config.jwksUrl
      ? createRemoteJWKSet(new URL(config.jwksUrl), {
          cooldownDuration: config.jwksCooldownSeconds * 1000,
          timeoutDuration: 5_000,
        })
      : staticKeys(config.publicKeys);
  }

  /** The principal of a token: from the cache when verified before and not yet expired. */
  verify(token: string, now = Date.now()): Principal | Promise<Principal> {
    const cached = this.verified.get(token);
    if (cached && cached.expiresAtMs > now) return cached.principal;
    if (cached) this.verified.delete(token);
    if (token.length > MAX_TOKEN_CHARS)
      throw unauthenticated(
        `bearer token is ${token.length} characters; at most ${MAX_TOKEN_CHARS} are accepted`,
      );
    return this.verifyNew(token);
  }

  private async verifyNew(token: string): Promise<Principal> {
    const config = this.config;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: config.issuer,
        audience: [...config.audience],
        algorithms: [...config.algorithms],
        clockTolerance: config.clockSkewSeconds,
        requiredClaims: ["exp"],
      }));
    } catch (error) {
      throw tokenRejected(error);
    }
    const principal = this.principalOf(payload);
    this.verified.set(token, { principal, expiresAtMs: (payload.exp ?? 0) * 1000 });
    return principal;
  }

  private principalOf(payload: JWTPayload): Principal {
    const { claims } = this.config;
    const roleNames = listClaim(payload, claims.roles);
    const roles = roleNames === undefined ? [...this.config.defaultRoles] : roleNames.filter(isRole);
    const tenant = stringClaim(payload, claims.tenant) ?? "";
    if (tenant === "" && !roles.includes("admin"))
      throw unauthenticated(`token has no "${claims.tenant}" claim naming its tenant`);
    const subject = typeof payload.sub === "string" ? payload.sub : "";
    return grantPrincipal(`jwt:${subject || "(no sub)"}`, {
      tenant,
      roles,
      entitlements: listClaim(payload, claims.entitlements) ?? [],
      projects: listClaim(payload, claims.projects) ?? [],
      userId: stringClaim(payload, claims.user) ?? "",
      expiresAtMs: (payload.exp ?? 0) * 1000,
    });
  }
}

/** A claim by name, or by dotted path into nested objects (`realm_access.roles`). */
function claim(payload: JWTPayload, name: string): unknown {
  if (name in payload) return payload[name];
  let value: unknown = payload;
  for (const part of name.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function stringClaim(payload: JWTPayload, name: string): string | undefined {
  const value = claim(payload, name);
  return typeof value === "string" ? value : undefined;
}

/** A list claim: an array of strings, or one space-separated string (as OAuth `scope` is). */
function listClaim(payload: JWTPayload, name: string): string[] | undefined {
  const value = claim(payload, name);
  if (typeof value === "string") return value.split(" ").filter((part) => part !== "");
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === "string");
  return undefined;
}

/**
 * Configured keys (JWK objects, PEM texts or PEM files). A token's `kid` picks the key with that kid;
 * keys without one (a PEM has none) serve tokens whose kid matches no key.
 */
function staticKeys(keys: JwtConfig["publicKeys"]): JWTVerifyGetKey {
  const jwks = keys.map((key): JWK => {
    if (typeof key !== "string") return key as JWK;
    const pem = key.includes("-----BEGIN") ? key : readFileSync(key, "utf8");
    return createPublicKey(pem).export({ format: "jwk" }) as JWK;
  });
  const withKid = jwks.filter((key) => key.kid !== undefined);
  const keyed = createLocalJWKSet({ keys: withKid });
  const unkeyed = createLocalJWKSet({ keys: jwks.filter((key) => key.kid === undefined) });
  return (header, token) =>
    header.kid !== undefined && withKid.some((key) => key.kid === header.kid)
      ? keyed(header, token)
      : unkeyed({ ...header, kid: undefined }, token);
}

/** Why jose refused a token, as the caller should read it (never the token itself). */
function tokenRejected(error: unknown): WayfindError {
  const code = (error as { code?: string }).code;
  const claimName = (error as { claim?: string }).claim;
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return unauthenticated("bearer token has expired; get a new one");
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return unauthenticated(
        claimName === "nbf"
          ? "bearer token is not valid yet (nbf)"
          : `bearer token's "${claimName}" claim is not accepted by this server`,
      );
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return unauthenticated(
        "bearer token's signature algorithm is not accepted (asymmetric algorithms only)",
      );
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return unauthenticated("bearer token's signature does not verify");
    case "ERR_JWKS_NO_MATCHING_KEY":
    case "ERR_JWKS_MULTIPLE_MATCHING_KEYS":
      return unauthenticated("no key of the server's key set matches the bearer token (kid / alg)");
    case "ERR_JWKS_TIMEOUT":
    case "ERR_JOSE_GENERIC":
    case undefined: // fetch failed (network)
      return new WayfindError(
        "unavailable",
        "the key set (JWKS) to verify bearer tokens cannot be fetched; retry",
      );
    default:
      return unauthenticated("bearer token is not a valid JWT");
  }
}
