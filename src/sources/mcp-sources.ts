/** The configured MCP servers together: each synced by this process, or by the replica holding its lease. */

import type { Logger } from "pino";
import type { McpServerConfig } from "../config/index.ts";
import type { ToolRegistry } from "../discovery/index.ts";
import { failedPrecondition, WayfindError } from "../errors.ts";
import type { HeldLease } from "../replication/lease.ts";
import type { SourceCall, ToolCallResult, ToolExecutor } from "../tools/execute.ts";
import type { SessionClient } from "../tools/mcp-session.ts";
import { CallShare } from "./call-share.ts";
import { McpSource, type McpSourceStatus, type McpTimeouts, mcpSourceId } from "./mcp.ts";
import { type CallLimits, DEFAULT_CALL_LIMITS, McpCallLine } from "./mcp-calls.ts";

/** A tenant's call session of a server that no call used for this long is closed. */
const IDLE_CALL_SESSION_MS = 10 * 60_000;
const IDLE_SWEEP_MS = 60_000;
/**
 * Connections of their own one tenant's sessions may hold to one server at once: each is a process
 * of a stdio server, so a tenant opening sessions without end cannot start processes without end.
 */
const MAX_SESSION_CONNECTIONS = 64;

/**
 * Takes the lease on a named job for this replica while it can (src/replication/lease.ts): given
 * when replicas share a database, so that one replica at a time syncs each MCP server.
 */
type LeaseHolder = (
  name: string,
  handlers: { readonly onAcquired: () => void; readonly onLost: () => void },
) => HeldLease;

/**
 * An MCP server that one replica of a fleet syncs at a time: the holder of its lease runs an
 * McpSource (a fresh one per lease taken); the others serve the catalog the holder registered, and
 * report the source healthy, since for them it is. The lease passes on when its holder dies.
 */
class LeasedMcpSource {
  readonly id: string;
  private readonly kind: McpSourceStatus["kind"];
  private readonly lease: HeldLease;
  private current: McpSource | undefined;
  private firstSync: Promise<void> = Promise.resolve();

  constructor(
    config: McpServerConfig,
    create: () => McpSource,
    lease: LeaseHolder,
    logger: Logger,
    onHealthChange: (status: McpSourceStatus) => void,
  ) {
    this.id = mcpSourceId(config.name);
    this.kind = config.transport === "stdio" ? "mcp_stdio" : "mcp_http";
    this.lease = lease(this.id, {
      onAcquired: () => {
        logger.info({ source: this.id }, "mcp lease taken: this replica syncs the server");
        this.current = create();
        this.firstSync = this.current.start();
      },
      onLost: () => {
        logger.warn({ source: this.id }, "mcp lease lost: another replica syncs the server now");
        const lost = this.current;
        this.current = undefined;
        void lost?.close();
        onHealthChange(this.status());
      },
    });
    void this.lease.ready.then(() => {
      if (this.current === undefined) onHealthChange(this.status());
    });
  }

  /** Settles once the lease's first attempt and, if it was taken, the first sync have finished. */
  async started(): Promise<void> {
    await this.lease.ready;
    await this.firstSync;
  }

  status(): McpSourceStatus {
    return (
      this.current?.status() ?? {
        id: this.id,
        kind: this.kind,
        lastSyncTime: undefined,
        healthy: true,
        lastError: "",
        lastSyncMs: undefined,
      }
    );
  }

  async close(): Promise<void> {
    await this.lease.stop();
    await this.current?.close();
  }
}

/**
 * Every configured MCP server, started together and closed together; also the executor of their
 * tools (src/tools/execute.ts) and what the MCP gateway (mcp-gateway.ts) asks them through.
 *
 * Whose connection a request takes: each tenant has one per server, shared by its calls that no
 * client can answer (gRPC CallTool, MCP sessions that declared nothing); an MCP session that can be
 * asked or told something (SessionClient.ownConnections) has its own per server, so whatever the
 * server sends on it reaches that session and no other. All of a tenant's connections to a server
 * share its slots and breaker (call-share.ts).
 */
/** What the MCP sources serve and how (McpSources). */
export interface McpSourcesOptions {
  /** The configured servers, in the config's order. */
  readonly configs: readonly McpServerConfig[];
  /** Where their tools are registered. */
  readonly registry: ToolRegistry;
  readonly logger: Logger;
  /** Connect, request and backoff timings; default DEFAULT_MCP_TIMEOUTS. */
  readonly timeouts?: Partial<McpTimeouts>;
  /** Told each server's health as it changes (the server's health service per source). */
  readonly onHealthChange?: (status: McpSourceStatus) => void;
  /** With replicas: each server is synced by the replica holding its lease. */
  readonly lease?: LeaseHolder;
  /** Bounds on calls: slots, breaker, result size; default DEFAULT_CALL_LIMITS. */
  readonly callLimits?: CallLimits;
}

export class McpSources implements ToolExecutor {
  /** The servers this process syncs itself (empty when replicas share them through leases). */
  readonly sources: readonly McpSource[];
  /** The configured servers, in the config's order. */
  readonly configs: readonly McpServerConfig[];
  private readonly leased: readonly LeasedMcpSource[];
  private readonly callConfigs: ReadonlyMap<string, McpServerConfig>;
  /** By source and tenant (and session, for a session's own). */
  private readonly callLines = new Map<string, McpCallLine>();
  /** By source and tenant: the slots and breaker of all of the tenant's connections. */
  private readonly shares = new Map<string, CallShare>();
  /** The keys of each session's own connections. */
  private readonly sessionLines = new Map<string, Set<string>>();
  /** By source and tenant: the keys of its sessions' own connections. */
  private readonly ownLines = new Map<string, Set<string>>();
  private readonly callLimits: CallLimits;
  private readonly idleSweep: NodeJS.Timeout;

  private readonly registry: ToolRegistry;
  private readonly logger: Logger;

  constructor(options: McpSourcesOptions) {
    const { configs, registry, logger, timeouts = {}, onHealthChange = () => {}, lease } = options;
    const callLimits = options.callLimits ?? DEFAULT_CALL_LIMITS;
    this.registry = registry;
    this.logger = logger;
    this.configs = configs;
    this.callConfigs = new Map(configs.map((config) => [mcpSourceId(config.name), config]));
    this.callLimits = callLimits;
    this.idleSweep = setInterval(() => this.closeIdleCallSessions(), IDLE_SWEEP_MS);
    this.idleSweep.unref();
    const create = (config: McpServerConfig) =>
      new McpSource(config, registry, logger, timeouts, onHealthChange);
    this.sources = lease ? [] : configs.map(create);
    this.leased = lease
      ? configs.map(
          (config) => new LeasedMcpSource(config, () => create(config), lease, logger, onHealthChange),
        )
      : [];
  }

  /**
   * Drops tools of `mcp:` sources no longer in the config (a server removed from the config, not one
   * that is down), then starts every server. Resolves once each first attempt has finished or
   * `waitMs` has passed, whichever is first; syncing continues in the background either way.
   */
  async start(waitMs: number): Promise<void> {
    const configured = new Set([...this.sources, ...this.leased].map((s) => s.id));
    const stale = new Set<string>();
    for (const tool of this.registry.all())
      if (tool.owner === "" && tool.source.startsWith("mcp:") && !configured.has(tool.source))
        stale.add(tool.source);
    for (const source of stale) {
      const result = await this.registry.register(source, [], { replaceSource: true });
      this.logger.info({ source, removed: result.removed }, "mcp server no longer configured; tools removed");
    }
    const first = Promise.all([
      ...this.sources.map((s) => s.start()),
      ...this.leased.map((s) => s.started()),
    ]);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
    });
    await Promise.race([first, timeout]);
    clearTimeout(timer);
  }

  serves(source: string): boolean {
    return this.callConfigs.has(source);
  }

  execute(call: SourceCall): Promise<ToolCallResult> {
    return this.lineFor(call.source, call.tenantId, call.session?.client).call(call);
  }

  /**
   * The connection a request of `tenant` to `source` takes: the session's own when `client` is one
   * that can be asked or told something, else the tenant's. FAILED_PRECONDITION for a tenant the
   * server has no credentials for when it requires them.
   */
  lineFor(source: string, tenant: string, client: SessionClient | undefined): McpCallLine {
    const config = this.callConfigs.get(source);
    if (config === undefined) throw new Error(`no MCP server is configured as source ${source}`);
    const credentials = config.tenantCredentials[tenant];
    if (credentials === undefined && config.requireTenantCredentials)
      throw failedPrecondition(
        `MCP server "${config.name}" has no credentials for your tenant ` +
          "(mcp_servers[].tenant_credentials); ask the operator to add them",
      );
    const shareKey = `${source}\u0000${tenant}`;
    const own = client?.ownConnections() === true ? client : undefined;
    if (own?.ended()) throw new WayfindError("cancelled", "the MCP session has ended");
    const key = own === undefined ? shareKey : `${shareKey}\u0000${own.sessionId}`;
    let line = this.callLines.get(key);
    if (line === undefined) {
      const owned = this.ownLines.get(shareKey) ?? new Set<string>();
      if (own !== undefined && owned.size >= MAX_SESSION_CONNECTIONS)
        throw new WayfindError(
          "resource_exhausted",
          `${MAX_SESSION_CONNECTIONS} sessions of your tenant already have a connection of their own to MCP server ` +
            `"${config.name}" (sessions that answer its requests, set a log level or subscribe), the most wayfind opens; ` +
            "end a session you no longer use",
        );
      let share = this.shares.get(shareKey);
      if (share === undefined) {
        share = new CallShare(config, (openMs) =>
          this.logger.warn(
            { source, tenant: tenant || undefined, openMs },
            "mcp server failed calls in a row; its breaker is open",
          ),
        );
        this.shares.set(shareKey, share);
      }
      line = new McpCallLine({
        config,
        limits: this.callLimits,
        logger: this.logger,
        tenant,
        credentials,
        share,
        session: own,
      });
      this.callLines.set(key, line);
      if (own !== undefined) {
        const keys = this.sessionLines.get(own.sessionId) ?? new Set<string>();
        keys.add(key);
        this.sessionLines.set(own.sessionId, keys);
        owned.add(key);
        this.ownLines.set(shareKey, owned);
      }
    }
    return line;
  }

  /** The connections a session has open of its own. */
  linesOf(sessionId: string): McpCallLine[] {
    return [...(this.sessionLines.get(sessionId) ?? [])]
      .map((key) => this.callLines.get(key))
      .filter((line): line is McpCallLine => line !== undefined);
  }

  /** A session ended: its own connections are closed (a stdio server's process with each). */
  async sessionEnded(sessionId: string): Promise<void> {
    const keys = this.sessionLines.get(sessionId);
    if (keys === undefined) return;
    this.sessionLines.delete(sessionId);
    const lines = [...keys].map((key) => {
      const line = this.callLines.get(key);
      this.callLines.delete(key);
      const shareKey = key.slice(0, key.length - sessionId.length - 1);
      const owned = this.ownLines.get(shareKey);
      if (owned?.delete(key) && owned.size === 0) this.ownLines.delete(shareKey);
      return line;
    });
    await Promise.all(lines.map((line) => line?.close()));
  }

  /** Connections no request used for a while are closed (a stdio server's process with them). */
  private closeIdleCallSessions(): void {
    const before = Date.now() - IDLE_CALL_SESSION_MS;
    for (const line of this.callLines.values()) if (line.lastUsedMs < before) line.closeIdleSession();
  }

  statuses(): McpSourceStatus[] {
    return [...this.sources, ...this.leased].map((s) => s.status());
  }

  async close(): Promise<void> {
    clearInterval(this.idleSweep);
    await Promise.all([
      ...[...this.sources, ...this.leased].map((s) => s.close()),
      ...[...this.callLines.values()].map((line) => line.close()),
    ]);
  }
}
