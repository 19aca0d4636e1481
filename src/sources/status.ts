import type { CatalogConfig } from "../config/index.ts";
import type { ToolCatalog } from "../discovery/index.ts";
import { catalogSourceId } from "./catalog-files.ts";
import type { McpSources } from "./mcp.ts";

export type ToolSourceKind = "catalog_file" | "mcp_stdio" | "mcp_http" | "api";

export interface ToolSourceStatus {
  /** Source id: `mcp:<name>`, `catalog:<namespace or file>`, or what RegisterTools was given. */
  readonly name: string;
  readonly kind: ToolSourceKind;
  /** Tools registered from the source right now (its last good catalog). */
  readonly toolCount: number;
  readonly lastSyncTime: Date | undefined;
  readonly healthy: boolean;
  /** Empty when healthy. */
  readonly lastError: string;
}

/**
 * Every tool source the server knows: configured catalog files, configured MCP servers, and any
 * other source found in the catalog (registered through the API, possibly in an earlier run).
 * Tool counts always come from the catalog itself, so they match what search sees.
 */
export class ToolSourceRegistry {
  private readonly catalogFiles = new Map<string, Date>();
  private readonly apiSyncs = new Map<string, Date>();

  constructor(
    private readonly catalog: ToolCatalog,
    private readonly mcp: McpSources | undefined,
  ) {}

  /** Records that the configured catalog files were (re)loaded now. */
  catalogFilesLoaded(catalogs: readonly CatalogConfig[], at = new Date()): void {
    for (const config of catalogs) this.catalogFiles.set(catalogSourceId(config), at);
  }

  /** Records a successful RegisterTools call for `source`. */
  apiRegistered(source: string, at = new Date()): void {
    this.apiSyncs.set(source, at);
  }

  list(): ToolSourceStatus[] {
    const counts = new Map<string, number>();
    for (const tool of this.catalog.all()) counts.set(tool.source, (counts.get(tool.source) ?? 0) + 1);
    const out: ToolSourceStatus[] = [];
    const listed = new Set<string>();
    for (const [name, at] of this.catalogFiles) {
      listed.add(name);
      out.push({
        name,
        kind: "catalog_file",
        toolCount: counts.get(name) ?? 0,
        lastSyncTime: at,
        healthy: true,
        lastError: "",
      });
    }
    for (const status of this.mcp?.statuses() ?? []) {
      listed.add(status.id);
      out.push({
        name: status.id,
        kind: status.kind,
        toolCount: counts.get(status.id) ?? 0,
        lastSyncTime: status.lastSyncTime,
        healthy: status.healthy,
        lastError: status.lastError,
      });
    }
    const api = new Set([...counts.keys(), ...this.apiSyncs.keys()]);
    for (const name of [...api].sort()) {
      if (listed.has(name)) continue;
      out.push({
        name,
        kind: "api",
        toolCount: counts.get(name) ?? 0,
        lastSyncTime: this.apiSyncs.get(name),
        healthy: true,
        lastError: "",
      });
    }
    return out;
  }
}
