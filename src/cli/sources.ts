import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ToolDiscoveryService, type ToolSource, ToolSourceKind } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { OPERATOR_ROLE, ROLE_HEADER } from "../auth/index.ts";

const KIND_LABELS: Readonly<Record<ToolSourceKind, string>> = {
  [ToolSourceKind.UNSPECIFIED]: "?",
  [ToolSourceKind.CATALOG_FILE]: "catalog",
  [ToolSourceKind.MCP_STDIO]: "mcp-stdio",
  [ToolSourceKind.MCP_HTTP]: "mcp-http",
  [ToolSourceKind.API]: "api",
};

/**
 * `wayfind sources`: calls ListToolSources over gRPC as the operator (every tenant's sources) and
 * prints a table. Returns the exit code:
 * 0 when every source is healthy, 1 when one is not or the server cannot be reached.
 */
export async function listSources(
  addr: string,
  out: NodeJS.WritableStream,
  /** An operator key or token; undefined = the development operator header (a loopback server). */
  apiKey?: string,
): Promise<number> {
  const baseUrl = /^https?:\/\//.test(addr) ? addr : `http://${addr}`;
  const client = createClient(ToolDiscoveryService, createGrpcTransport({ baseUrl }));
  const headers = apiKey ? { authorization: `Bearer ${apiKey}` } : { [ROLE_HEADER]: OPERATOR_ROLE };
  let sources: ToolSource[];
  try {
    ({ sources } = await client.listToolSources({}, { timeoutMs: 10_000, headers }));
  } catch (error) {
    throw new Error(`cannot list sources from ${baseUrl}: ${whatFailed(error, apiKey !== undefined)}`);
  }
  out.write(formatSourcesTable(sources));
  return sources.every((s) => s.healthy) ? 0 : 1;
}

/**
 * Why the call failed and what to do next: a server that answered said why (a refused key is not an
 * unreachable server); only one that did not answer may not be running.
 */
function whatFailed(error: unknown, withKey: boolean): string {
  const failure = ConnectError.from(error);
  switch (failure.code) {
    case Code.Unauthenticated:
      return withKey
        ? `${failure.rawMessage}; check the key (--api-key or WAYFIND_API_KEY), or make one on the server's machine: wayfind keys create --role admin`
        : `${failure.rawMessage}; give an operator key with --api-key or WAYFIND_API_KEY (wayfind keys create --role admin on the server's machine)`;
    case Code.PermissionDenied:
      return `${failure.rawMessage}; listing every source needs an admin key bound to no tenant (wayfind keys create --role admin)`;
    case Code.Unavailable:
    case Code.Unknown:
    case Code.DeadlineExceeded:
      return `${failure.rawMessage}; is \`wayfind serve\` running there?`;
    default:
      return failure.rawMessage;
  }
}

/** Fixed-width columns; the error column is last and never truncated. */
function formatSourcesTable(sources: readonly ToolSource[]): string {
  const header = ["SOURCE", "TENANT", "KIND", "TOOLS", "HEALTHY", "LAST SYNC", "LAST ERROR"];
  const rows = sources.map((s) => [
    s.name,
    s.tenantId || "-",
    KIND_LABELS[s.kind] ?? String(s.kind),
    String(s.toolCount),
    s.healthy ? "yes" : "NO",
    s.lastSyncTime
      ? timestampDate(s.lastSyncTime)
          .toISOString()
          .replace(/\.\d+Z$/, "Z")
      : "-",
    s.lastError.replace(/\s+/g, " "),
  ]);
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? "").length)));
  const lines = all.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
  if (sources.length === 0) lines.push("(no tool sources)");
  return `${lines.join("\n")}\n`;
}
