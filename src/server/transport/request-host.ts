/** The host (and port) a request was sent to: HTTP/1.1's Host, or HTTP/2's :authority. */
export function requestHost(headers: { readonly host?: string | undefined }): string {
  return headers.host ?? (headers as { readonly ":authority"?: string })[":authority"] ?? "";
}

/** `name[:port]` or `[IPv6][:port]`, nothing else (no user info, path or spaces). */
const HOST = /^(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The host name of `host[:port]`, lower-cased, without IPv6 brackets; "" when it is not a host. */
export function hostnameOf(host: string): string {
  if (!HOST.test(host)) return "";
  const url = `http://${host}`;
  return URL.canParse(url) ? new URL(url).hostname.replace(/^\[(.*)\]$/, "$1") : "";
}
