import { DEFAULTS } from "./defaults.ts";
import type { PathResolver } from "./paths.ts";
import type { ConfigFile } from "./schema.ts";
import type {
  CatalogConfig,
  LoadingMode,
  McpServerConfig,
  SecretRef,
  ToolExampleConfig,
  ToolSourceOptions,
} from "./types.ts";

// The tool sources as written — `catalogs` and `mcp_servers` — with defaults and paths made absolute.

type RawSource = {
  loading_mode?: "always" | "deferred" | undefined;
  always_loaded?: string[] | undefined;
  deferred?: string[] | undefined;
  examples?: Record<string, { args?: Record<string, unknown>; description?: string; tags?: string[] }[]>;
  tags?: string[] | undefined;
};

/** `catalogs`: each file with its source options. */
export function catalogsConfig(
  raw: ConfigFile["catalogs"],
  defaultLoadingMode: LoadingMode,
  pathFrom: PathResolver,
): CatalogConfig[] {
  return (raw ?? []).map((c) => ({
    path: pathFrom(c.path),
    namespace: c.namespace,
    invalidSchemas: c.invalid_schemas ?? "refuse",
    ...sourceOptions(c, defaultLoadingMode),
  }));
}

/** `mcp_servers`: each server with its transport, limits, tenants' credentials and source options. */
export function mcpServersConfig(
  raw: ConfigFile["mcp_servers"],
  defaultLoadingMode: LoadingMode,
  pathFrom: PathResolver,
): McpServerConfig[] {
  // Secret files resolve like every path; the secrets themselves are read when a session opens.
  const secrets = (refs: Record<string, { env: string } | { file: string }> | undefined) =>
    Object.fromEntries(
      Object.entries(refs ?? {}).map(([key, ref]): [string, SecretRef] => [
        key,
        "file" in ref ? { file: pathFrom(ref.file) } : ref,
      ]),
    );
  return (raw ?? []).map((m): McpServerConfig => {
    const common = {
      name: m.name,
      namespace: m.namespace ?? m.name,
      syncIntervalSeconds: m.sync_interval_seconds ?? DEFAULTS.mcpServer.syncIntervalSeconds,
      callTimeoutSeconds: m.call_timeout_seconds ?? DEFAULTS.mcpServer.callTimeoutSeconds,
      maxConcurrentCalls: m.max_concurrent_calls ?? DEFAULTS.mcpServer.maxConcurrentCalls,
      breakerFailures: m.breaker?.failures ?? DEFAULTS.mcpServer.breakerFailures,
      breakerOpenSeconds: m.breaker?.open_seconds ?? DEFAULTS.mcpServer.breakerOpenSeconds,
      tenantCredentials: Object.fromEntries(
        Object.entries(m.tenant_credentials ?? {}).map(([tenant, c]) => [
          tenant,
          { headers: secrets(c.headers), env: secrets(c.env) },
        ]),
      ),
      requireTenantCredentials: m.require_tenant_credentials ?? DEFAULTS.mcpServer.requireTenantCredentials,
      ...sourceOptions(m, defaultLoadingMode),
    };
    // The schema guarantees command for stdio and url for http and sse.
    return m.transport === "stdio"
      ? {
          ...common,
          transport: "stdio",
          command: m.command ?? "",
          args: m.args ?? [],
          env: m.env ?? {},
          cwd: m.cwd === undefined ? undefined : pathFrom(m.cwd),
        }
      : { ...common, transport: m.transport, url: m.url ?? "", headers: m.headers ?? {} };
  });
}

/** What every source says of its tools: loading modes, examples, tags. */
function sourceOptions(s: RawSource, defaultLoadingMode: LoadingMode): ToolSourceOptions {
  return {
    loadingMode: s.loading_mode ?? defaultLoadingMode,
    alwaysLoaded: s.always_loaded ?? DEFAULTS.catalog.alwaysLoaded,
    deferred: s.deferred ?? DEFAULTS.catalog.deferred,
    examples: Object.fromEntries(
      Object.entries(s.examples ?? {}).map(([tool, list]) => [
        tool,
        list.map(
          (e): ToolExampleConfig => ({
            args: e.args ?? {},
            description: e.description ?? "",
            tags: e.tags ?? [],
          }),
        ),
      ]),
    ),
    tags: s.tags ?? DEFAULTS.catalog.tags,
  };
}
