/**
 * Executing a tool through wayfind (CallTool; `tool_call` on the MCP endpoint): the call is checked
 * by the ToolService, then handed to the executor of the tool's source, and what came of it is one
 * `tool_called` event. Only MCP servers execute tools (src/sources/mcp-calls.ts); every other source's
 * tools are run by the agent runtime.
 */
import { type Caller, eventScopeOf } from "../caller/caller.ts";
import type { Tool } from "../discovery/index.ts";
import { failedPrecondition, WayfindError } from "../errors.ts";
import type { EventSink } from "../events/index.ts";
import type { JsonObject } from "../json.ts";
import type { SessionCall } from "./mcp-session.ts";

/** One call as its source's executor sends it. */
export interface SourceCall {
  readonly source: string;
  /** The name the source itself gave the tool (without wayfind's namespace). */
  readonly name: string;
  readonly arguments: JsonObject;
  /** Whose call it is: a source may hold credentials per tenant. */
  readonly tenantId: string;
  /** Past this the call is cut (DEADLINE_EXCEEDED); undefined = the source's own timeout. */
  readonly timeoutMs: number | undefined;
  /** Aborted when the caller goes away: the call is cancelled upstream too. */
  readonly signal: AbortSignal;
  /** Passed upstream in the request's `_meta` (W3C trace context: `traceparent`, `tracestate`). */
  readonly meta: Readonly<Record<string, string>>;
  /**
   * The MCP session the call is made for (its progress sink, and its client, which the server may
   * ask things while it runs); undefined = a call from the port, which no client can answer.
   */
  readonly session: SessionCall | undefined;
}

/** A tool's result as its source returned it: MCP's CallToolResult, content unchanged. */
export interface ToolCallResult {
  readonly content: readonly JsonObject[];
  readonly structuredContent?: JsonObject;
  readonly isError: boolean;
  /** Size of the result as JSON. */
  readonly bytes: number;
}

/** Runs the tools of the sources it serves. */
export interface ToolExecutor {
  /** Whether `source`'s tools can be executed here. */
  serves(source: string): boolean;
  /**
   * Sends the call. Rejects with a WayfindError: `unavailable` (unreachable, garbage),
   * `deadline_exceeded`, `cancelled`, `resource_exhausted` (breaker open, too many calls waiting,
   * result too big), `failed_precondition` (the server refused the call).
   */
  execute(call: SourceCall): Promise<ToolCallResult>;
}

/** What a call came to, as `tool_called` and the metrics name it. */
type CallOutcome = "ok" | "error" | "failed" | "timeout" | "cancelled";

export interface ExecutedCall {
  readonly tool: Tool;
  readonly result: ToolCallResult;
  readonly durationMs: number;
}

export type ExecuteOptions = Pick<SourceCall, "timeoutMs" | "signal" | "meta" | "session">;

/**
 * Executes a checked call of `tool` for `caller` on `executor` (executorFor's) and records a
 * `tool_called` event, whatever the outcome.
 */
export async function executeTool(
  executor: ToolExecutor,
  events: EventSink,
  caller: Caller,
  tool: Tool,
  args: JsonObject,
  options: ExecuteOptions,
): Promise<ExecutedCall> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const record = (outcome: CallOutcome, bytes: number) =>
    events.emit({
      type: "tool_called",
      ...eventScopeOf(caller),
      attributes: {
        tool: tool.name,
        source: tool.source,
        duration_ms: elapsed(),
        outcome,
        result_bytes: bytes,
      },
    });
  try {
    const result = await executor.execute({
      source: tool.source,
      name: upstreamName(tool),
      arguments: args,
      tenantId: caller.tenantId,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      meta: options.meta,
      session: options.session,
    });
    record(result.isError ? "error" : "ok", result.bytes);
    return { tool, result, durationMs: elapsed() };
  } catch (error) {
    record(outcomeOfFailure(error), 0);
    throw error;
  }
}

/** The executor that runs `tool`; FAILED_PRECONDITION, naming who runs it, when there is none. */
export function executorFor(executor: ToolExecutor | undefined, tool: Tool): ToolExecutor {
  if (executor?.serves(tool.source)) return executor;
  throw failedPrecondition(
    `tool "${tool.name}" comes from source "${tool.source}", not from an MCP server: wayfind cannot execute it; ` +
      "the agent runtime runs it (check the call with CheckToolCall, then run it yourself)",
  );
}

function outcomeOfFailure(error: unknown): CallOutcome {
  if (error instanceof WayfindError) {
    if (error.code === "deadline_exceeded") return "timeout";
    if (error.code === "cancelled") return "cancelled";
  }
  return "failed";
}

/** The name the source listed: wayfind prefixed it with the source's namespace. */
function upstreamName(tool: Tool): string {
  const prefix = `${tool.namespace}.`;
  return tool.namespace !== "" && tool.name.startsWith(prefix) ? tool.name.slice(prefix.length) : tool.name;
}
