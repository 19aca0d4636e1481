/** Raw Streamable HTTP requests to wayfind's /mcp, for tests that drive sessions by hand. */

/** The headers of a request to /mcp with `secret` (and the session, once there is one). */
export function mcpHeaders(secret: string, session?: string): Record<string, string> {
  return {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${secret}`,
    ...(session === undefined ? {} : { "mcp-session-id": session }),
  };
}

/** Opens a session with `secret` (initialize, then the initialized notification); its id. */
export async function openMcpSession(baseUrl: string, secret: string): Promise<string> {
  const opened = await fetch(`${baseUrl}/mcp`, {
    method: "POST",
    headers: mcpHeaders(secret),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } },
    }),
  });
  await opened.text();
  if (opened.status !== 200) throw new Error(`initialize was answered ${opened.status}`);
  const session = opened.headers.get("mcp-session-id") ?? "";
  const initialized = await fetch(`${baseUrl}/mcp`, {
    method: "POST",
    headers: mcpHeaders(secret, session),
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  await initialized.text();
  return session;
}

/** A ping on the session: its HTTP status (200 while the session answers, 404 once it was closed). */
export async function pingStatus(baseUrl: string, secret: string, session: string): Promise<number> {
  const ping = await fetch(`${baseUrl}/mcp`, {
    method: "POST",
    headers: mcpHeaders(secret, session),
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
  });
  await ping.text();
  return ping.status;
}
