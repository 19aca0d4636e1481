/**
 * MCP servers as tool sources.
 *
 * Startup: the server waits at most `mcpStartupWaitMs` (default 5 s, all servers in parallel) for
 * the first sync, then listens regardless; a slow or dead server keeps syncing in the background and
 * meanwhile its last persisted catalog (SQLite) is served. Timeouts: connect + initialize 10 s, each
 * tools/list page 10 s, a whole sync 30 s, close 5 s (stdio: end stdin, SIGTERM, SIGKILL). Failures
 * reconnect with capped exponential backoff (1 s doubling to 60 s) with equal jitter; a failure never
 * unregisters tools, only a successful list does (replaceSource), and never to an empty set when the
 * server listed tools that all failed validation.
 *
 * Over 500 lines because McpSource is one state machine (connect, page, register, back off, close)
 * whose timers and child process must be read together to see that every path ends closed.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import { z } from "zod";
import type { McpServerConfig } from "../config/index.ts";
import type { SideEffects, ToolInput, ToolRegistry } from "../discovery/index.ts";
import { jsonSchemaProblems } from "../discovery/schema-dialects.ts";
import { recordSteps } from "../discovery/validate.ts";
import type { JsonObject } from "../json.ts";
import { LIMITS } from "../limits.ts";
import { runInSlices } from "../slices.ts";
import { inSpan } from "../telemetry.ts";
import { JsonRpcRefusal } from "../tools/mcp-session.ts";
import { applySourceOptions } from "./catalog-files.ts";
import { fetchWithOwnSignal } from "./mcp-fetch.ts";
import { Redactor, StderrTail } from "./upstream-text.ts";

/** Source id of a configured MCP server. */
export function mcpSourceId(name: string): string {
  return `mcp:${name}`;
}

export interface McpTimeouts {
  /** Spawn/connect plus `initialize` (default 10 s). */
  readonly connectMs: number;
  /** Each `tools/list` page (default 10 s). */
  readonly requestMs: number;
  /** A whole sync, all pages together (default 30 s). */
  readonly syncMs: number;
  /** First reconnect delay; doubles per failure up to `backoffMaxMs`, with jitter (default 1 s). */
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  /** How long list_changed notifications are coalesced before one re-list (default 200 ms). */
  readonly debounceMs: number;
}

const DEFAULT_MCP_TIMEOUTS: McpTimeouts = {
  connectMs: 10_000,
  requestMs: 10_000,
  syncMs: 30_000,
  backoffInitialMs: 1_000,
  backoffMaxMs: 60_000,
  debounceMs: 200,
};

/** Hard limits against a server that pages forever or floods us. */
const MAX_PAGES = 1_000;

/** What the syncing connection declares it answers (see connect). */
const SYNC_CAPABILITIES = {
  sampling: {},
  elicitation: { form: {}, url: {} },
  roots: { listChanged: true },
};

export interface McpSourceStatus {
  readonly id: string;
  readonly kind: "mcp_stdio" | "mcp_http";
  /** Undefined until the first successful sync of this process. */
  readonly lastSyncTime: Date | undefined;
  readonly healthy: boolean;
  /** Empty when healthy. */
  readonly lastError: string;
  /** How long the last successful sync took (tools/list and registration), in ms; undefined before one. */
  readonly lastSyncMs: number | undefined;
}

export interface SyncOutcome {
  readonly added: number;
  readonly updated: number;
  readonly removed: number;
  readonly unchanged: number;
  /** Tools the server listed that were not registered, one reason each. */
  readonly skipped: readonly string[];
}

/** Lenient shape of a `tools/list` result: each tool is checked on its own so one bad tool skips only itself. */
const ListResult = z.looseObject({
  tools: z.array(z.unknown()),
  nextCursor: z.string().optional(),
});

const McpTool = z.looseObject({
  name: z.string().min(1),
  title: z.string().optional(),
  description: z.string().optional(),
  inputSchema: z.looseObject({ type: z.literal("object") }),
  outputSchema: z.looseObject({ type: z.literal("object") }).optional(),
  annotations: z
    .looseObject({
      title: z.string().optional(),
      readOnlyHint: z.boolean().optional(),
      destructiveHint: z.boolean().optional(),
      idempotentHint: z.boolean().optional(),
      openWorldHint: z.boolean().optional(),
    })
    .optional(),
});
type McpTool = z.infer<typeof McpTool>;

/**
 * One configured MCP server as a tool source: connects, pages through `tools/list`, registers the
 * tools under the server's namespace (source `mcp:<name>`), and re-syncs on `list_changed` and on
 * the configured interval. Any failure (spawn, initialize, timeout, crash, garbage) closes the
 * connection, marks the source unhealthy and reconnects with capped exponential backoff and jitter;
 * the last good catalog stays registered. Nothing here ever throws into the caller.
 */
export class McpSource {
  readonly id: string;
  readonly kind: McpSourceStatus["kind"];
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  private syncing: Promise<void> | undefined;
  private resyncQueued = false;
  private failures = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private intervalTimer: NodeJS.Timeout | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** What the server last wrote to stderr: the operator's diagnostics (redacted), in lastError and the log. */
  private readonly stderrTail: StderrTail;
  private stdio: StdioClientTransport | undefined;
  private http: StreamableHTTPClientTransport | undefined;
  private lastSyncTime: Date | undefined;
  private healthy = false;
  private lastError = "connecting: no sync yet";
  private firstAttempt: Promise<void> | undefined;
  private syncCount = 0;
  private readonly timeouts: McpTimeouts;

  constructor(
    private readonly config: McpServerConfig,
    private readonly registry: ToolRegistry,
    private readonly logger: Logger,
    timeouts: Partial<McpTimeouts> = {},
    private readonly onHealthChange: (status: McpSourceStatus) => void = () => {},
  ) {
    this.id = mcpSourceId(config.name);
    this.kind = config.transport === "stdio" ? "mcp_stdio" : "mcp_http";
    this.timeouts = { ...DEFAULT_MCP_TIMEOUTS, ...timeouts };
    this.logger = logger.child({ source: this.id });
    this.stderrTail = new StderrTail(new Redactor(configuredValues(config)));
  }

  private lastSyncMs: number | undefined;

  status(): McpSourceStatus {
    return {
      id: this.id,
      kind: this.kind,
      lastSyncTime: this.lastSyncTime,
      healthy: this.healthy,
      lastError: this.healthy ? "" : this.lastError,
      lastSyncMs: this.lastSyncMs,
    };
  }

  /** Process id of the running stdio server, if any (logs, tests). */
  get pid(): number | undefined {
    return this.client ? (this.stdio?.pid ?? undefined) : undefined;
  }

  /** Number of completed syncs (successful or not) since start; for tests and benches. */
  get syncs(): number {
    return this.syncCount;
  }

  /**
   * Starts connecting in the background. The returned promise settles (never rejects) when the first
   * connect-and-sync attempt has finished, successfully or not.
   */
  start(): Promise<void> {
    this.firstAttempt ??= this.connectAndSync();
    if (this.config.syncIntervalSeconds > 0) {
      this.intervalTimer = setInterval(() => {
        if (this.client) void this.sync();
      }, this.config.syncIntervalSeconds * 1000);
      this.intervalTimer.unref();
    }
    return this.firstAttempt;
  }

  /** Re-lists now (connecting first if needed); resolves when done. Never rejects. */
  async sync(): Promise<void> {
    if (this.closed) return;
    if (!this.client) {
      await this.connectAndSync();
      return;
    }
    if (this.syncing) {
      // One more pass after the running one, so a change seen mid-sync is not lost.
      this.resyncQueued = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      try {
        do {
          this.resyncQueued = false;
          await this.syncOnce();
        } while (this.resyncQueued && this.client && !this.closed);
      } finally {
        this.syncing = undefined;
      }
    })();
    return this.syncing;
  }

  /** Stops timers and closes the connection (a stdio child is ended, then killed). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.debounceTimer);
    clearInterval(this.intervalTimer);
    // A streamable-HTTP session is ended politely (DELETE), briefly: the server may be gone.
    const http = this.client ? this.http : undefined;
    if (http?.sessionId) await withDeadline(http.terminateSession(), 1_000, "close").catch(() => undefined);
    await this.disconnect();
  }

  private connectAndSync(): Promise<void> {
    this.connecting ??= (async () => {
      try {
        await this.connect();
      } catch (error) {
        this.fail(`connect failed: ${describe(error)}`);
        this.syncCount++;
        return;
      } finally {
        this.connecting = undefined;
      }
      await this.sync();
    })();
    return this.connecting;
  }

  private async connect(): Promise<void> {
    await this.disconnect();
    this.stderrTail.clear();
    // A server may offer some tools only to clients that answer its requests (sampling, elicitation,
    // roots): the catalog lists what such a client would see. This connection has no roots to give
    // and no one to ask.
    const client = new Client({ name: "wayfind", version: "0.1.0" }, { capabilities: SYNC_CAPABILITIES });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.scheduleResync());
    client.fallbackRequestHandler = async (request) => {
      if (request.method === "roots/list") return { roots: [] };
      throw new JsonRpcRefusal(
        ErrorCode.MethodNotFound,
        `wayfind's connection for listing tools has no client to answer ${request.method}; ` +
          "ask while serving a call of a session that declared it",
      );
    };
    const transport = this.createTransport();
    client.onerror = (error) => this.logger.debug({ err: error }, "mcp transport error");
    client.onclose = () => {
      // Only the live connection's close matters; a replaced or deliberately closed one is ignored.
      if (this.client !== client) return;
      this.client = undefined;
      if (this.closed) return;
      this.fail(`connection closed${this.stderrHint()}`);
    };
    this.client = client;
    try {
      await withDeadline(
        client.connect(transport, { timeout: this.timeouts.connectMs }),
        this.timeouts.connectMs,
        "initialize",
      );
    } catch (error) {
      this.client = undefined;
      void client.close().catch(() => undefined);
      throw new Error(`${describe(error)}${this.stderrHint()}`);
    }
    const server = client.getServerVersion();
    this.logger.info(
      { server: server?.name, version: server?.version, pid: this.pid },
      "mcp server connected",
    );
  }

  private createTransport(): Transport {
    const transport = createMcpTransport(this.config, (text) => this.stderrTail.append(text));
    if (transport instanceof StreamableHTTPClientTransport) this.http = transport;
    else if (transport instanceof StdioClientTransport) this.stdio = transport;
    return transport;
  }

  private async disconnect(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    // close() waits up to ~4 s for a stubborn child (end stdin, SIGTERM, SIGKILL); never longer.
    await withDeadline(client.close(), 5_000, "close").catch(() => undefined);
  }

  private scheduleResync(): void {
    if (this.closed) return;
    clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => {
      this.logger.debug("tools/list_changed received");
      void this.sync();
    }, this.timeouts.debounceMs);
    this.debounceTimer.unref();
  }

  private syncOnce(): Promise<void> {
    return inSpan("wayfind.mcp_sync", { "wayfind.mcp.server": this.config.name }, () => this.syncTools());
  }

  private async syncTools(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const started = performance.now();
    let listed: unknown[];
    try {
      listed = await withDeadline(this.listAll(client), this.timeouts.syncMs, "tools/list");
    } catch (error) {
      this.syncCount++;
      this.fail(`tools/list failed: ${describe(error)}${this.stderrHint()}`);
      // A server that hangs or talks garbage gets a fresh connection (and process) on the next try.
      if (this.client === client) await this.disconnect();
      return;
    }
    // Closed while listing: the database may be closing too, so nothing is registered.
    if (this.closed) return;
    const outcome = await this.register(listed);
    this.syncCount++;
    if (!outcome) return;
    this.failures = 0;
    this.lastSyncTime = new Date();
    const ms = Math.round(performance.now() - started);
    this.lastSyncMs = ms;
    if (outcome.skipped.length > 0) {
      this.setHealth(
        false,
        `${outcome.skipped.length} of ${listed.length} tools skipped: ${outcome.skipped.join("; ")}`,
      );
      this.logger.warn({ ...outcome, ms }, "mcp tools synced with skipped tools");
    } else {
      const wasHealthy = this.healthy;
      this.setHealth(true, "");
      const changed = outcome.added + outcome.updated + outcome.removed > 0;
      if (changed || !wasHealthy) this.logger.info({ ...outcome, ms }, "mcp tools synced");
      else this.logger.debug({ ...outcome, ms }, "mcp tools unchanged");
    }
  }

  private async listAll(client: Client): Promise<unknown[]> {
    const tools: unknown[] = [];
    const cursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await client.request(
        { method: "tools/list", params: cursor === undefined ? {} : { cursor } },
        ListResult,
        { timeout: this.timeouts.requestMs },
      );
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined || cursor === "") return tools;
      if (cursors.has(cursor)) throw new Error(`server repeated page cursor ${JSON.stringify(cursor)}`);
      cursors.add(cursor);
    }
    throw new Error(`more than ${MAX_PAGES} pages of tools`);
  }

  /**
   * Checks each listed tool on its own and registers the good ones, replacing the source. Returns
   * undefined (and keeps the last good catalog) when nothing could be registered.
   */
  private async register(listed: readonly unknown[]): Promise<SyncOutcome | undefined> {
    const skipped: string[] = [];
    const seen = new Set<string>();
    const inputs: ToolInput[] = [];
    listed.forEach((raw, i) => {
      const parsed = McpTool.safeParse(raw);
      if (!parsed.success) {
        const name = (raw as { name?: unknown } | null)?.name;
        const label = typeof name === "string" ? `"${name}"` : `#${i}`;
        skipped.push(
          `tool ${label}: ${parsed.error.issues[0]?.path.join(".") || "(root)"} ${parsed.error.issues[0]?.message ?? "is invalid"}`,
        );
        return;
      }
      if (seen.has(parsed.data.name)) {
        skipped.push(`tool "${parsed.data.name}" is listed more than once; the first is kept`);
        return;
      }
      seen.add(parsed.data.name);
      inputs.push(toolInputFromMcpTool(parsed.data, this.config));
    });
    // Closed while checking: the database may be closing too, so nothing is registered.
    const good = await runInSlices(this.registrable(inputs, skipped), () => !this.closed);
    if (!good) return undefined;
    if (good.length === 0 && listed.length > 0) {
      this.fail(
        `none of the ${listed.length} listed tools could be registered: ${skipped.join("; ")}`,
        false,
      );
      return undefined;
    }
    try {
      const result = await this.registry.register(this.id, good, { replaceSource: true });
      return {
        added: result.added,
        updated: result.updated,
        removed: result.removed,
        unchanged: result.unchanged,
        skipped,
      };
    } catch (error) {
      this.fail(`registering tools failed: ${describe(error)}`, false);
      return undefined;
    }
  }

  /**
   * The listed tools that can be registered; each one that cannot is added to `skipped`. Checked in
   * steps of one tool or less (runInSlices), as the catalog checks them: a server listing thousands
   * of tools, or config examples for many, must not hold other calls up.
   */
  private *registrable(inputs: readonly ToolInput[], skipped: string[]): Generator<void, ToolInput[]> {
    const good: ToolInput[] = [];
    for (const input of applySourceOptions(inputs, this.config, this.config.name)) {
      yield;
      try {
        const record = yield* recordSteps(input, 0);
        // The server's author wrote the schema: its tool loads as sent, and the operator hears of it.
        const [schemaProblem] = jsonSchemaProblems(record.argsSchema);
        if (schemaProblem)
          this.logger.warn(
            { tool: record.name, path: schemaProblem.path, problem: schemaProblem.message },
            "tool's input schema is not a valid JSON Schema; loaded as sent, CheckToolCall cannot check its calls",
          );
        // MCP servers are global sources: only another global source can hold the name.
        const registered = this.registry.lookup(record.name, "")[0];
        const registeredBy = registered?.name === record.name ? registered.source : undefined;
        if (registeredBy !== undefined && registeredBy !== this.id) {
          skipped.push(`tool "${record.name}" is already registered by source "${registeredBy}"`);
          continue;
        }
        good.push(input);
      } catch (error) {
        skipped.push(describe(error));
      }
    }
    return good;
  }

  private setHealth(healthy: boolean, error: string): void {
    const changed = healthy !== this.healthy;
    this.healthy = healthy;
    this.lastError = error;
    if (changed) this.onHealthChange(this.status());
  }

  /**
   * Marks the source unhealthy and, for connection trouble, schedules a reconnect with capped
   * exponential backoff and jitter. A list we cannot register waits for list_changed or the interval.
   */
  private fail(message: string, reconnect = true): void {
    this.setHealth(false, message);
    if (this.closed) return;
    if (!reconnect) {
      this.logger.warn({ error: message }, "mcp source unhealthy; last good catalog kept");
      return;
    }
    const base = Math.min(this.timeouts.backoffMaxMs, this.timeouts.backoffInitialMs * 2 ** this.failures);
    this.failures++;
    // "Equal jitter": half fixed, half random, so retries spread out but never come back-to-back.
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.logger.warn({ error: message, retryInMs: delay, attempt: this.failures }, "mcp source unhealthy");
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (!this.closed && !this.client) void this.connectAndSync();
    }, delay);
    this.reconnectTimer.unref();
  }

  /** The server's last stderr lines, redacted, to append to the operator's lastError. */
  private stderrHint(): string {
    const lines = this.stderrTail.lastLines();
    return lines === "" ? "" : ` (stderr: ${lines})`;
  }
}

/** The values a server is given in the config (environment, headers): never shown as they are. */
export function configuredValues(config: McpServerConfig): string[] {
  return Object.values(config.transport === "stdio" ? config.env : config.headers);
}

/**
 * MCP tool → catalog input. Annotations, most telling first: `readOnlyHint` → read,
 * `destructiveHint` → write, `openWorldHint` → external, explicitly not read-only → write; no
 * hints → the catalog default. `idempotentHint` becomes the tag `idempotent`.
 */
function toolInputFromMcpTool(
  tool: McpTool,
  options: { namespace: string; loadingMode: ToolInput["loadingMode"] },
): ToolInput {
  const hints = tool.annotations;
  let sideEffects: SideEffects | undefined;
  if (hints?.readOnlyHint === true) sideEffects = "read";
  else if (hints?.destructiveHint === true) sideEffects = "write";
  else if (hints?.openWorldHint === true) sideEffects = "external";
  else if (hints?.readOnlyHint === false) sideEffects = "write";
  const title = tool.title ?? hints?.title;
  const description = tool.description ?? "";
  return {
    name: tool.name,
    namespace: options.namespace,
    ...(title ? { title: title.slice(0, LIMITS.toolTitle.max) } : {}),
    description: description.slice(0, LIMITS.toolDescription.max),
    tags: hints?.idempotentHint === true ? ["idempotent"] : [],
    ...(sideEffects ? { sideEffects } : {}),
    loadingMode: options.loadingMode,
    argsSchema: tool.inputSchema as JsonObject,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema as JsonObject } : {}),
  };
}

/**
 * A client transport to the configured server: its child process (stdio), its URL (Streamable HTTP),
 * or its event stream's URL (the older HTTP+SSE transport).
 */
export function createMcpTransport(
  config: McpServerConfig,
  onStderr: (text: string) => void,
): StdioClientTransport | StreamableHTTPClientTransport | SSEClientTransport {
  if (config.transport !== "stdio") {
    const requestInit = { headers: { ...config.headers } };
    return config.transport === "sse"
      ? new SSEClientTransport(new URL(config.url), { requestInit })
      : new StreamableHTTPClientTransport(new URL(config.url), { requestInit, fetch: fetchWithOwnSignal });
  }
  const transport = new StdioClientTransport({
    command: config.command,
    args: [...config.args],
    env: { ...getDefaultEnvironment(), ...config.env },
    ...(config.cwd ? { cwd: config.cwd } : {}),
    stderr: "pipe",
  });
  transport.stderr?.on("data", (chunk: Buffer) => onStderr(chunk.toString()));
  return transport;
}

export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const syscall = (error as NodeJS.ErrnoException).syscall;
  if (code === "ENOENT" && syscall?.startsWith("spawn"))
    return `command not found: ${(error as NodeJS.ErrnoException).path ?? "?"} (${error.message}); check command and PATH`;
  return error.message;
}
