/** Raw Streamable HTTP requests to wayfind's /mcp, for tests that drive sessions by hand. */
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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

/** The `_meta` a request of the 2026-07-28 revision carries: its revision, capabilities and client. */
const MODERN_META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
};

/**
 * A JSON-RPC request of the 2026-07-28 revision (no session: `_meta` says who asks) and the headers
 * that go with it: `Mcp-Method`, and `Mcp-Name` for a call of `params.name`.
 */
export function modernRequest(
  secret: string,
  id: number,
  method: string,
  params: Record<string, unknown> = {},
): { headers: Record<string, string>; body: string } {
  return {
    headers: {
      ...mcpHeaders(secret),
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(typeof params.name === "string" ? { "mcp-name": params.name } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: MODERN_META } }),
  };
}

/**
 * A data dir holding what the MCP endpoint's tests serve besides MCP servers: a catalog file of one
 * tool (`ops.jsonl`: `restart`) and a skill pack (`skills/`: the demo's paginate-cursor-api).
 */
export function endpointFixtureDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "wayfind-mcp-endpoint-"));
  writeFileSync(
    join(dir, "ops.jsonl"),
    `${JSON.stringify({ name: "restart", description: "Restart a service by name.", parameters: { type: "object" } })}\n`,
  );
  mkdirSync(join(dir, "skills"));
  copyFileSync(
    join(import.meta.dirname, "../../demo/skills/paginate-cursor-api.skill.md"),
    join(dir, "skills", "paginate-cursor-api.skill.md"),
  );
  return dir;
}
