/**
 * Executing the tools of the configured MCP servers (CallTool; `tool_call` on the MCP endpoint): one
 * session per server and tenant, separate from the session that syncs the server's tool list (a
 * replica that does not hold a server's lease still calls it), opened on the tenant's first call and
 * again after a failure.
 */
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  ErrorCode,
  McpError,
  ProgressNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { McpServerConfig, SecretRef, TenantCredentials } from "../config/index.ts";
import { RetryLaterError, WayfindError } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import type { SourceCall, ToolCallResult } from "../tools/execute.ts";
import type { ProgressSink } from "../tools/progress.ts";
import { configuredValues, createMcpTransport, describe, mcpSourceId, withDeadline } from "./mcp.ts";
import { ownSignal } from "./mcp-fetch.ts";
import { Redactor, StderrTail } from "./upstream-text.ts";

export interface CallLimits {
  /** Largest result passed on, as JSON; a bigger one is refused (it could not be answered anyway). */
  readonly maxResultBytes: number;
  /** Connect plus `initialize` of a call session. */
  readonly connectMs: number;
}

/** Calls that may wait for a server's slots; more are refused at once. */
const MAX_QUEUED_CALLS = 1_000;

export const DEFAULT_CALL_LIMITS: CallLimits = {
  maxResultBytes: 4 * 1024 * 1024 - 64 * 1024,
  connectMs: 10_000,
};

/**
 * One tenant's calls of one MCP server's tools: a session of their own (with the tenant's
 * credentials when the server declares some), a bounded number in flight, each with a deadline, and
 * a breaker, so a slow or dead server, or another tenant's traffic, costs a tenant's calls nothing
 * but a clear error of their own.
 */
export class McpCallLine {
  readonly source: string;
  /** When a call last used the line (epoch ms): an idle line's session is closed. */
  lastUsedMs = Date.now();
  private client: Promise<Client> | undefined;
  private inFlight = 0;
  /** Calls waiting for a slot, first come first served. */
  private readonly queue: (() => void)[] = [];
  private failuresInRow = 0;
  private openUntil = 0;
  private closed = false;
  /**
   * What the session's server last wrote to stderr: logged (redacted) when a call fails, never put
   * in the caller's error (it may hold the tenant's credentials).
   */
  private stderrTail: StderrTail;
  /** Removes the server's and the tenant's credential values from what reaches a caller or the log. */
  private redactor: Redactor;
  /** The progress sinks of the calls in flight, by the token sent with each (expectProgress). */
  private readonly progressSinks = new Map<string, ProgressSink>();
  private progressTokens = 0;

  constructor(
    private readonly config: McpServerConfig,
    private readonly limits: CallLimits,
    private readonly logger: Logger,
    private readonly tenant: string,
    /** The tenant's own credentials for this server; undefined = the server's own. */
    private readonly credentials: TenantCredentials | undefined,
  ) {
    this.source = mcpSourceId(config.name);
    this.redactor = new Redactor(configuredValues(config));
    this.stderrTail = new StderrTail(this.redactor);
  }

  async call(call: SourceCall): Promise<ToolCallResult> {
    if (this.closed) throw unavailable(this.config.name, "wayfind is stopping");
    const now = Date.now();
    this.lastUsedMs = now;
    if (now < this.openUntil)
      throw new RetryLaterError(
        `MCP server "${this.config.name}" failed ${this.config.breakerFailures} calls in a row ` +
          "(mcp_servers[].breaker.failures); " +
          `its calls are refused for ${Math.ceil((this.openUntil - now) / 1000)} s more, then tried again`,
        this.openUntil - now,
      );
    const timeoutMs = Math.min(
      call.timeoutMs ?? Number.POSITIVE_INFINITY,
      this.config.callTimeoutSeconds * 1000,
    );
    const deadline = now + timeoutMs;
    await this.slot(call, deadline);
    try {
      const result = await this.send(call, deadline - Date.now(), timeoutMs);
      this.failuresInRow = 0;
      return result;
    } catch (error) {
      if (error instanceof WayfindError && countsAgainstServer(error)) this.failed();
      throw error;
    } finally {
      this.release();
    }
  }

  /**
   * One of the server's `max_concurrent_calls` slots: at once when one is free, else after the calls
   * queued before this one (in order), within the call's deadline and while its caller waits.
   */
  private slot(call: SourceCall, deadline: number): Promise<void> {
    if (this.inFlight < this.config.maxConcurrentCalls) {
      this.inFlight++;
      return Promise.resolve();
    }
    if (this.queue.length >= MAX_QUEUED_CALLS)
      return Promise.reject(
        new RetryLaterError(
          `MCP server "${this.config.name}" has ${this.inFlight} calls in flight (mcp_servers[].max_concurrent_calls) ` +
            `and ${this.queue.length} waiting; try again shortly`,
          1_000,
        ),
      );
    return new Promise<void>((resolve, reject) => {
      const leave = (error: WayfindError) => {
        clearTimeout(timer);
        call.signal.removeEventListener("abort", cancelled);
        const index = this.queue.indexOf(start);
        if (index >= 0) this.queue.splice(index, 1);
        reject(error);
      };
      const cancelled = () => leave(cancelledError(call));
      const timer = setTimeout(
        () =>
          leave(
            new WayfindError(
              "deadline_exceeded",
              `the call of "${call.name}" waited its whole timeout for one of MCP server "${this.config.name}"'s ` +
                `${this.config.maxConcurrentCalls} call slots (mcp_servers[].max_concurrent_calls)`,
            ),
          ),
        Math.max(0, deadline - Date.now()),
      );
      const start = () => {
        clearTimeout(timer);
        call.signal.removeEventListener("abort", cancelled);
        resolve();
      };
      call.signal.addEventListener("abort", cancelled, { once: true });
      this.queue.push(start);
    });
  }

  /** Frees a slot: the first queued call takes it over, or it is free. */
  private release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.inFlight--;
  }

  /** Ends the session (a stdio server's process) when nothing is in flight; the next call opens one. */
  closeIdleSession(): void {
    if (this.inFlight === 0) this.drop();
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    const open = await client?.catch(() => undefined);
    if (open) await withDeadline(open.close(), 5_000, "close").catch(() => undefined);
  }

  /**
   * A progress token for one call, its reports passed to `sink` until the call ends. wayfind keeps the
   * tokens rather than the SDK: the SDK forgets a call's token as its result arrives, before it hands
   * on a report that arrived just ahead of the result (often the last one).
   */
  private expectProgress(sink: ProgressSink): string {
    const token = `wayfind-${++this.progressTokens}`;
    this.progressSinks.set(token, sink);
    return token;
  }

  /** Sends the call with `leftMs` of its `timeoutMs` still to go. */
  private async send(call: SourceCall, leftMs: number, timeoutMs: number): Promise<ToolCallResult> {
    const client = await this.connected();
    // The SDK never removes its abort listener from a request's signal, and the caller's signal is
    // aborted once the caller's RPC ends: on the caller's own signal, every finished call would be
    // cancelled upstream after the fact. The SDK gets a signal of the call's own, unlinked at its end.
    const own = ownSignal(call.signal);
    const progressToken = call.onProgress ? this.expectProgress(call.onProgress) : undefined;
    const meta = { ...call.meta, ...(progressToken === undefined ? {} : { progressToken }) };
    let raw: unknown;
    try {
      raw = await client.request(
        {
          method: "tools/call",
          params: {
            name: call.name,
            arguments: call.arguments,
            ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}),
          },
        },
        CallToolResultSchema,
        { signal: own.signal, timeout: Math.max(1, leftMs) },
      );
    } catch (error) {
      throw this.callError(error, call, timeoutMs);
    } finally {
      own.release();
      if (progressToken !== undefined) this.progressSinks.delete(progressToken);
    }
    const text = JSON.stringify(raw);
    const bytes = Buffer.byteLength(text);
    if (bytes > this.limits.maxResultBytes)
      throw new WayfindError(
        "resource_exhausted",
        `the result of "${call.name}" from MCP server "${this.config.name}" is ${bytes} bytes of JSON, ` +
          `more than the ${this.limits.maxResultBytes} wayfind passes on; ask the tool for less`,
      );
    const result = raw as { content?: JsonObject[]; structuredContent?: JsonObject; isError?: boolean };
    return {
      content: result.content ?? [],
      ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
      isError: result.isError === true,
      bytes,
    };
  }

  private callError(error: unknown, call: SourceCall, timeoutMs: number): WayfindError {
    const name = this.config.name;
    if (call.signal.aborted) return cancelledError(call);
    if (error instanceof McpError) {
      if (error.code === ErrorCode.RequestTimeout)
        return new WayfindError(
          "deadline_exceeded",
          `MCP server "${name}" did not answer the call of "${call.name}" within ${timeoutMs} ms`,
        );
      if (error.code === ErrorCode.ConnectionClosed) {
        this.drop();
        return this.unavailable(call, "the connection closed during the call", error);
      }
      // The server answered with a JSON-RPC error (an unknown tool, arguments it refuses): its words.
      if (error.code !== ErrorCode.InternalError)
        return new WayfindError(
          "failed_precondition",
          `MCP server "${name}" refused the call of "${call.name}": ${this.redactor.redact(error.message)}`,
        );
    }
    // A result that is not a CallToolResult, or the transport failing under the call.
    this.drop();
    return this.unavailable(call, describe(error), error);
  }

  /**
   * UNAVAILABLE for a call the server failed, in words the caller may read (redacted); the server's
   * stderr goes to the log alone.
   */
  private unavailable(call: SourceCall | undefined, reason: string, error: unknown): WayfindError {
    const stderr = this.stderrTail.lastLines();
    this.logger.warn(
      {
        source: this.source,
        tenant: this.tenant || undefined,
        tool: call?.name,
        reason: this.redactor.redact(String(error)),
        stderr: stderr || undefined,
      },
      "mcp server failed a call",
    );
    const hint = stderr === "" ? "" : " (its stderr is in wayfind's log)";
    return unavailable(this.config.name, `${this.redactor.redact(reason)}${hint}`);
  }

  /** The session, opened on first use and after a failure dropped it. */
  private connected(): Promise<Client> {
    this.client ??= this.open().catch((error: unknown) => {
      this.client = undefined;
      throw this.unavailable(undefined, `could not connect: ${describe(error)}`, error);
    });
    return this.client;
  }

  private async open(): Promise<Client> {
    const client = new Client({ name: "wayfind", version: "0.1.0" }, { capabilities: {} });
    const tenantSecrets: string[] = [];
    const config = this.credentials
      ? withCredentials(this.config, this.credentials, (value) => tenantSecrets.push(value))
      : this.config;
    this.redactor = new Redactor([...configuredValues(this.config), ...tenantSecrets]);
    this.stderrTail = new StderrTail(this.redactor);
    const tail = this.stderrTail;
    const transport = createMcpTransport(config, (text) => tail.append(text));
    client.setNotificationHandler(ProgressNotificationSchema, ({ params }) => {
      const { progress, total, message } = params;
      this.progressSinks.get(String(params.progressToken))?.({
        progress,
        ...(total === undefined ? {} : { total }),
        ...(message === undefined ? {} : { message }),
      });
    });
    client.onclose = () => {
      // Only the live session's close matters; one that never opened has no session to drop.
      this.client?.then((open) => open === client && this.drop()).catch(() => undefined);
    };
    try {
      await withDeadline(client.connect(transport), this.limits.connectMs, "initialize");
    } catch (error) {
      void client.close().catch(() => undefined);
      throw error;
    }
    this.logger.info({ source: this.source, tenant: this.tenant }, "mcp call session opened");
    return client;
  }

  /** Forgets the session; the next call opens a new one. */
  private drop(): void {
    const client = this.client;
    this.client = undefined;
    void client?.then((open) => open.close()).catch(() => undefined);
  }

  private failed(): void {
    this.failuresInRow++;
    if (this.failuresInRow < this.config.breakerFailures) return;
    const openMs = this.config.breakerOpenSeconds * 1000;
    this.openUntil = Date.now() + openMs;
    this.failuresInRow = 0;
    this.logger.warn(
      { source: this.source, openMs },
      "mcp server failed calls in a row; its breaker is open",
    );
  }
}

/**
 * The server's config with a tenant's credentials added: headers (HTTP) or environment (stdio).
 * `secret` is told each value read, to keep it out of whatever the server writes back.
 */
function withCredentials(
  config: McpServerConfig,
  credentials: TenantCredentials,
  secret: (value: string) => void,
): McpServerConfig {
  const read = (refs: Readonly<Record<string, SecretRef>>) =>
    Object.fromEntries(
      Object.entries(refs).map(([key, ref]) => {
        const value = readSecret(ref);
        secret(value);
        return [key, value];
      }),
    );
  return config.transport === "http"
    ? { ...config, headers: { ...config.headers, ...read(credentials.headers) } }
    : { ...config, env: { ...config.env, ...read(credentials.env) } };
}

/** A secret's value, read when a session opens (so a rotated file is picked up); errors never show it. */
function readSecret(ref: SecretRef): string {
  if ("env" in ref) {
    const value = process.env[ref.env];
    if (!value) throw new Error(`the environment variable ${ref.env} (a tenant's credential) is not set`);
    return value;
  }
  try {
    return readFileSync(ref.file, "utf8").trimEnd();
  } catch {
    throw new Error(`the file ${ref.file} (a tenant's credential) cannot be read`);
  }
}

function countsAgainstServer(error: WayfindError): boolean {
  return error.code === "unavailable" || error.code === "deadline_exceeded";
}

function cancelledError(call: SourceCall): WayfindError {
  return new WayfindError("cancelled", `the call of "${call.name}" was cancelled`);
}

function unavailable(server: string, reason: string): WayfindError {
  return new WayfindError("unavailable", `MCP server "${server}" cannot be reached: ${reason}`);
}
