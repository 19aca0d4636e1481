import { isIP } from "node:net";
import { ConfigError, type WayfindConfig } from "../config/index.ts";

/** Hosts only this machine can reach. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1" || host === "[::1]";
}

/**
 * Whether calls without credentials are served, acting as their CallerContext says. By default only on
 * loopback, where only this machine's processes reach the port (the quick start). Anywhere else it
 * takes `serve --insecure-allow-unauthenticated`: `auth.allow_unauthenticated: true` alone fails the
 * start, since anyone who reaches the port could act as any tenant.
 */
export function unauthenticatedAllowed(config: WayfindConfig): boolean {
  const { auth } = config;
  if (auth.insecureAllowUnauthenticated) return true;
  if (auth.allowUnauthenticated === false) return false;
  const loopback = isLoopback(config.server.host);
  if (auth.allowUnauthenticated === true && !loopback)
    throw new ConfigError([
      `auth.allow_unauthenticated is true but server.host ${config.server.host} is not loopback: anyone who reaches the port could act as any tenant; configure credentials (auth.api_keys, auth.jwt, auth.mtls) or pass --insecure-allow-unauthenticated`,
    ]);
  return loopback;
}
