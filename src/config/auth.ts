import { DEFAULTS } from "./defaults.ts";
import { ConfigError } from "./errors.ts";
import type { PathResolver } from "./paths.ts";
import type { ConfigFile } from "./schema.ts";
import type { AuthConfig, GrantConfig, JwtConfig, TlsConfig, WayfindConfig } from "./types.ts";

type RawAuth = NonNullable<ConfigFile["auth"]>;
type RawGrant = { tenant?: string | undefined } & Pick<
  NonNullable<RawAuth["api_keys"]>[number],
  "roles" | "entitlements" | "projects"
>;

const JWT_DEFAULT_ALGORITHMS = ["RS256", "PS256", "ES256", "EdDSA", "Ed25519"];

/** `auth` as written → AuthConfig with defaults (docs/design.md §8). */
export function authConfig(raw: RawAuth | undefined, pathFrom: PathResolver): AuthConfig {
  return {
    apiKeys: (raw?.api_keys ?? []).map((key) => ({
      ...grantConfig(key),
      id: key.id,
      keySha256: key.key_sha256,
      expiresAtMs: key.expires_at === undefined ? undefined : Date.parse(key.expires_at),
    })),
    jwt: raw?.jwt ? jwtConfig(raw.jwt, pathFrom) : undefined,
    mtls: raw?.mtls
      ? {
          clientCa: raw.mtls.client_ca === undefined ? undefined : pathFrom(raw.mtls.client_ca),
          principalFrom: raw.mtls.principal_from ?? "subject_cn",
          principals: Object.fromEntries(
            Object.entries(raw.mtls.principals).map(([name, grant]) => [name, grantConfig(grant)]),
          ),
        }
      : undefined,
    allowUnauthenticated: raw?.allow_unauthenticated,
    insecureAllowUnauthenticated: false,
    keyRetentionDays: raw?.key_retention_days ?? DEFAULTS.auth.keyRetentionDays,
    limits: {
      callsPerSecond: raw?.limits?.calls_per_second,
      burst: raw?.limits?.burst ?? Math.max(1, Math.ceil(raw?.limits?.calls_per_second ?? 1)),
      watchStreams: raw?.limits?.watch_streams,
    },
  };
}

function jwtConfig(raw: NonNullable<RawAuth["jwt"]>, pathFrom: PathResolver): JwtConfig {
  return {
    jwksUrl: raw.jwks_url,
    // A PEM may be written inline or as a file path.
    publicKeys: (raw.public_keys ?? []).map((key) =>
      typeof key === "string" && !key.includes("-----BEGIN") ? pathFrom(key) : key,
    ),
    issuer: raw.issuer,
    audience: typeof raw.audience === "string" ? [raw.audience] : raw.audience,
    algorithms: raw.algorithms ?? JWT_DEFAULT_ALGORITHMS,
    clockSkewSeconds: raw.clock_skew_seconds ?? 30,
    jwksCooldownSeconds: raw.jwks_cooldown_seconds ?? 30,
    claims: {
      tenant: raw.claims?.tenant ?? "tenant",
      user: raw.claims?.user ?? "sub",
      entitlements: raw.claims?.entitlements ?? "entitlements",
      roles: raw.claims?.roles ?? "roles",
      projects: raw.claims?.projects ?? "projects",
    },
    defaultRoles: raw.default_roles ?? [],
  };
}

function grantConfig(raw: RawGrant): GrantConfig {
  return {
    tenant: raw.tenant ?? "",
    roles: raw.roles,
    entitlements: raw.entitlements ?? [],
    projects: raw.projects ?? [],
  };
}

export function tlsConfig(
  raw: { cert_file: string; key_file: string; client_ca_file?: string | undefined } | undefined,
  pathFrom: PathResolver,
): TlsConfig | undefined {
  if (!raw) return undefined;
  return {
    certFile: pathFrom(raw.cert_file),
    keyFile: pathFrom(raw.key_file),
    clientCaFile: raw.client_ca_file === undefined ? undefined : pathFrom(raw.client_ca_file),
  };
}

/** `wayfind serve` flags about TLS and authentication, on top of the loaded config. */
export interface SecurityFlags {
  readonly tlsCert?: string | undefined;
  readonly tlsKey?: string | undefined;
  readonly insecureAllowUnauthenticated?: boolean | undefined;
}

/**
 * Applies --tls-cert / --tls-key (relative to the working directory; both, unless the config has
 * server.tls and one of them replaces its file) and --insecure-allow-unauthenticated.
 */
export function applySecurityFlags(
  config: WayfindConfig,
  flags: SecurityFlags,
  pathFrom: PathResolver,
): WayfindConfig {
  const { tlsCert, tlsKey } = flags;
  let tls = config.server.tls;
  if (tlsCert !== undefined || tlsKey !== undefined) {
    const certFile = tlsCert ?? tls?.certFile;
    const keyFile = tlsKey ?? tls?.keyFile;
    if (certFile === undefined || keyFile === undefined)
      throw new ConfigError([
        "command line: --tls-cert and --tls-key go together (or set server.tls in the config)",
      ]);
    tls = { certFile: pathFrom(certFile), keyFile: pathFrom(keyFile), clientCaFile: tls?.clientCaFile };
  }
  return {
    ...config,
    server: { ...config.server, tls },
    auth: {
      ...config.auth,
      insecureAllowUnauthenticated:
        flags.insecureAllowUnauthenticated ?? config.auth.insecureAllowUnauthenticated,
    },
  };
}
