import type { CatalogConfig } from "../config/index.ts";
import type { ToolCatalog } from "../discovery/index.ts";
import { catalogSourceId } from "./catalog-files.ts";
import type { McpSources } from "./mcp.ts";

export type ToolSourceKind = "catalog_file" | "mcp_stdio" | "mcp_http" | "api";

export interface ToolSourceStatus {
  /** Source id: `mcp:<name>`, `catalog:<namespace or file>`, or what RegisterTools was given. */
  readonly name: string;
  /** The tenant whose source it is; "" for global sources (configured, or registered by the operator). */
  readonly owner: string;
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
  /** Last RegisterTools per owner (tenant, or "" = global), then source. */
  private readonly apiSyncs = new Map<string, Map<string, Date>>();

  constructor(
    private readonly catalog: ToolCatalog,
    private readonly mcp: McpSources | undefined,
  ) {}

  /** Records that the configured catalog files were (re)loaded now. */
  catalogFilesLoaded(catalogs: readonly CatalogConfig[], at = new Date()): void {
    for (const config of catalogs) this.catalogFiles.set(catalogSourceId(config), at);
  }

  /** Records a successful RegisterTools call for `source` of `owner`. */
  apiRegistered(owner: string, source: string, at = new Date()): void {
    let syncs = this.apiSyncs.get(owner);
    if (!syncs) {
      syncs = new Map();
      this.apiSyncs.set(owner, syncs);
    }
    syncs.set(source, at);
  }

  /**
   * The sources of the owners `mayList` admits (src/caller/authorize.ts sourceOwnersVisibleTo).
   * Configured catalogs and MCP servers are global; a tenant's registered sources carry its owner.
   */
  list(mayList: (owner: string) => boolean): ToolSourceStatus[] {
    const owners = new Set([...this.apiSyncs.keys(), ...[...this.catalog.all()].map((tool) => tool.owner)]);
    owners.delete("");
    const tenants = [...owners].filter(mayList).sort();
    return [
      ...(mayList("") ? this.listOwner("", true) : []),
      ...tenants.flatMap((owner) => this.listOwner(owner, false)),
    ];
  }

  private listOwner(owner: string, withConfigured: boolean): ToolSourceStatus[] {
    const counts = new Map<string, number>();
    for (const tool of this.catalog.all())
      if (tool.owner === owner) counts.set(tool.source, (counts.get(tool.source) ?? 0) + 1);
    const out: ToolSourceStatus[] = [];
    const listed = new Set<string>();
    const configuredFiles = withConfigured ? this.catalogFiles : new Map<string, Date>();
    const mcpStatuses = withConfigured ? (this.mcp?.statuses() ?? []) : [];
    for (const [name, at] of configuredFiles) {
      listed.add(name);
      out.push({
        name,
        owner,
        kind: "catalog_file",
        toolCount: counts.get(name) ?? 0,
        lastSyncTime: at,
        healthy: true,
        lastError: "",
      });
    }
    for (const status of mcpStatuses) {
      listed.add(status.id);
      out.push({
        name: status.id,
        owner,
        kind: status.kind,
        toolCount: counts.get(status.id) ?? 0,
        lastSyncTime: status.lastSyncTime,
        healthy: status.healthy,
        lastError: status.lastError,
      });
    }
    const syncs = this.apiSyncs.get(owner) ?? new Map<string, Date>();
    const api = new Set([...counts.keys(), ...syncs.keys()]);
    for (const name of [...api].sort()) {
      if (listed.has(name)) continue;
      out.push({
        name,
        owner,
        kind: "api",
        toolCount: counts.get(name) ?? 0,
        lastSyncTime: syncs.get(name),
        healthy: true,
        lastError: "",
      });
    }
    return out;
  }
}
