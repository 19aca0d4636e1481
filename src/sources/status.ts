import type { CatalogConfig } from "../config/index.ts";
import type { Tool, ToolRegistry } from "../discovery/index.ts";
import { catalogSourceId } from "./catalog-files.ts";
import type { McpSources } from "./mcp-sources.ts";

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
    private readonly registry: ToolRegistry,
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
   * The sources of the owners `mayList` admits (src/caller/authorize.ts sourceListingFor): global
   * ones first (configured catalogs and MCP servers, then the operator's registrations), then each
   * tenant's registrations. With `visibleTools` (a caller who is not the operator) only those tools
   * are counted, a global source without any is left out, and errors are not shown.
   */
  list(mayList: (owner: string) => boolean, visibleTools?: (tool: Tool) => boolean): ToolSourceStatus[] {
    // Tools per owner and source, counted once for every owner listed.
    const counts = new Map<string, Map<string, number>>();
    for (const tool of this.registry.all()) {
      if (!mayList(tool.owner) || (visibleTools && !visibleTools(tool))) continue;
      let bySource = counts.get(tool.owner);
      if (!bySource) {
        bySource = new Map();
        counts.set(tool.owner, bySource);
      }
      bySource.set(tool.source, (bySource.get(tool.source) ?? 0) + 1);
    }
    const owners = [...new Set([...counts.keys(), ...this.apiSyncs.keys()])].filter(mayList);
    const tenants = owners.filter((owner) => owner !== "").sort();
    const empty = new Map<string, number>();
    const global = mayList("")
      ? [
          ...this.configured(counts.get("") ?? empty),
          ...this.registered("", counts.get("") ?? empty, this.configuredIds()),
        ]
      : [];
    const shown = visibleTools
      ? global.filter((source) => source.toolCount > 0).map((source) => ({ ...source, lastError: "" }))
      : global;
    return [
      ...shown,
      ...tenants.flatMap((owner) => this.registered(owner, counts.get(owner) ?? empty, new Set())),
    ];
  }

  private configuredIds(): Set<string> {
    return new Set([...this.catalogFiles.keys(), ...(this.mcp?.statuses() ?? []).map((status) => status.id)]);
  }

  /** Catalog files and MCP servers of the config: global sources. */
  private configured(counts: ReadonlyMap<string, number>): ToolSourceStatus[] {
    const files = [...this.catalogFiles].map(
      ([name, at]): ToolSourceStatus => ({
        name,
        owner: "",
        kind: "catalog_file",
        toolCount: counts.get(name) ?? 0,
        lastSyncTime: at,
        healthy: true,
        lastError: "",
      }),
    );
    const servers = (this.mcp?.statuses() ?? []).map(
      (status): ToolSourceStatus => ({
        name: status.id,
        owner: "",
        kind: status.kind,
        toolCount: counts.get(status.id) ?? 0,
        lastSyncTime: status.lastSyncTime,
        healthy: status.healthy,
        lastError: status.lastError,
      }),
    );
    return [...files, ...servers];
  }

  /** Sources of `owner` found in the catalog or registered through the API in this run. */
  private registered(
    owner: string,
    counts: ReadonlyMap<string, number>,
    configured: ReadonlySet<string>,
  ): ToolSourceStatus[] {
    const syncs = this.apiSyncs.get(owner) ?? new Map<string, Date>();
    return [...new Set([...counts.keys(), ...syncs.keys()])]
      .filter((name) => !configured.has(name))
      .sort()
      .map((name) => ({
        name,
        owner,
        kind: "api",
        toolCount: counts.get(name) ?? 0,
        lastSyncTime: syncs.get(name),
        healthy: true,
        lastError: "",
      }));
  }
}
