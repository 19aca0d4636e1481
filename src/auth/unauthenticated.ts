import { isIP } from "node:net";
import { ConfigError, type WayfindConfig } from "../config/index.ts";

/** Hosts only this machine can reach. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1" || host === "[::1]";
}

/** The host (and port) a request was sent to: HTTP/1.1's Host, or HTTP/2's :authority. */
export function requestHost(headers: { readonly host?: string | undefined }): string {
  return headers.host ?? (headers as { readonly ":authority"?: string })[":authority"] ?? "";
}

/** The host name of a URL, or of `host[:port]`; "" when it is neither. No IPv6 brackets. */
export function hostnameOf(urlOrHost: string): string {
  const url = urlOrHost.includes("://") ? urlOrHost : `http://${urlOrHost}`;
  return URL.canParse(url) ? new URL(url).hostname.replace(/^\[(.*)\]$/, "$1") : "";
}

/**
 * Why a server listening on loopback refuses a request sent to `host`, or undefined: a page whose
 * site rebinds its own name to 127.0.0.1 must not reach a server that trusts loopback callers.
 */
export function reboundHostRefusal(host: string): string | undefined {
  return isLoopback(hostnameOf(host))
    ? undefined
    : `Host "${host.slice(0, 100)}" does not name this server, which listens on loopback only (DNS rebinding protection)`;
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
