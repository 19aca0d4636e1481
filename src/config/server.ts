import { tlsConfig } from "./auth.ts";
import { DEFAULTS } from "./defaults.ts";
import type { PathResolver } from "./paths.ts";
import type { ConfigFile } from "./schema.ts";
import type { WayfindConfig } from "./types.ts";

/** `server` as written → the server's settings with defaults: its port, timeouts, endpoints and TLS. */
export function serverConfig(raw: ConfigFile["server"], pathFrom: PathResolver): WayfindConfig["server"] {
  const server = raw ?? {};
  return {
    host: server.host ?? DEFAULTS.server.host,
    port: server.port ?? DEFAULTS.server.port,
    dataDir: pathFrom(server.data_dir ?? DEFAULTS.server.dataDir),
    maxMessageBytes: server.max_message_bytes ?? DEFAULTS.server.maxMessageBytes,
    handshakeTimeoutSeconds: server.handshake_timeout_seconds ?? DEFAULTS.server.handshakeTimeoutSeconds,
    requestHeaderTimeoutSeconds:
      server.request_header_timeout_seconds ?? DEFAULTS.server.requestHeaderTimeoutSeconds,
    requestBodyTimeoutSeconds:
      server.request_body_timeout_seconds ?? DEFAULTS.server.requestBodyTimeoutSeconds,
    idleTimeoutSeconds: server.idle_timeout_seconds ?? DEFAULTS.server.idleTimeoutSeconds,
    maxConnections: server.max_connections ?? DEFAULTS.server.maxConnections,
    metrics: server.metrics ?? DEFAULTS.server.metrics,
    mcp: {
      enabled: server.mcp?.enabled ?? DEFAULTS.server.mcp.enabled,
      maxSessions: server.mcp?.max_sessions ?? DEFAULTS.server.mcp.maxSessions,
      maxSessionsPerCredential:
        server.mcp?.max_sessions_per_credential ?? DEFAULTS.server.mcp.maxSessionsPerCredential,
      maxSessionsPerTenant: server.mcp?.max_sessions_per_tenant ?? DEFAULTS.server.mcp.maxSessionsPerTenant,
      sessionIdleTimeoutSeconds:
        server.mcp?.session_idle_timeout_seconds ?? DEFAULTS.server.mcp.sessionIdleTimeoutSeconds,
      toolList: server.mcp?.tool_list ?? DEFAULTS.server.mcp.toolList,
    },
    cors: {
      allowedOrigins: server.cors?.allowed_origins ?? DEFAULTS.server.cors.allowedOrigins,
      maxAgeSeconds: server.cors?.max_age ?? DEFAULTS.server.cors.maxAgeSeconds,
    },
    console: server.console ?? DEFAULTS.server.console,
    allowedHosts: (server.allowed_hosts ?? DEFAULTS.server.allowedHosts).map((name) => name.toLowerCase()),
    tls: tlsConfig(server.tls, pathFrom),
    eventRetention: {
      maxEvents: server.event_retention?.max_events ?? DEFAULTS.server.eventRetention.maxEvents,
      maxAgeHours: server.event_retention?.max_age_hours ?? DEFAULTS.server.eventRetention.maxAgeHours,
    },
  };
}
