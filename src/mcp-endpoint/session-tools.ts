/**
 * What one MCP session lists and how it answers `tools/call`; a listed catalog tool is executed by
 * its MCP server (CallTool). A `fixed` list is the meta tools plus the caller's always-visible tools,
 * read once per session so `tools/list` never changes under a client (and never busts its prompt
 * cache). An `activated` list adds the tools activated in the session, read anew for each listing;
 * `changed` says when a call has changed it, for `notifications/tools/list_changed`.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { type CallToolResult, ErrorCode, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { Provider } from "../../gen/ts/wayfind/v1/common_pb.ts";
import type { McpToolList } from "../config/index.ts";
import { type ArgumentProblem, argumentChecker } from "../discovery/index.ts";
import { discoveryToolDefinitions } from "../discovery-tools/index.ts";
import type { JsonObject } from "../json.ts";
import { argumentsShapeProblem, repairMessage } from "../tools/call-check.ts";
import { JsonRpcRefusal } from "../tools/mcp-session.ts";
import { type CallScope, callTool, isMetaTool, runMetaTool, type WayfindClients } from "./meta-tools.ts";

/** Tools per `tools/list` page. */
const PAGE_SIZE = 100;

/** The meta tools' argument checkers, compiled once for every session. */
const META_CHECKERS = new Map<string, (args: unknown) => ArgumentProblem[]>(
  discoveryToolDefinitions({ includeDispatchTool: true }).map((tool) => [
    tool.name,
    argumentChecker(tool.argsSchema),
  ]),
);

/** One session's tool list: MCP tools in order, and the names of the catalog's tools among them. */
interface Listing {
  readonly tools: readonly McpTool[];
  readonly catalogTools: ReadonlySet<string>;
}

export class SessionTools {
  /** The list the client was last given (its later pages come from it). */
  private listing: Promise<Listing> | undefined;

  constructor(
    private readonly clients: WayfindClients,
    private readonly mode: McpToolList,
  ) {}

  /** A page of the session's tools; the cursor is where the next page starts. */
  async list(
    scope: CallScope,
    cursor: string | undefined,
  ): Promise<{ tools: McpTool[]; nextCursor?: string }> {
    // An activated list is read anew from its first page; its other pages are of the same reading.
    if (this.mode === "activated" && cursor === undefined) this.listing = undefined;
    const { tools } = await this.listed(scope);
    const start = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isInteger(start) || start < 0 || start > tools.length)
      throw new JsonRpcRefusal(
        ErrorCode.InvalidParams,
        `cursor ${JSON.stringify(cursor)} is not one this server gave`,
      );
    const end = start + PAGE_SIZE;
    return { tools: tools.slice(start, end), ...(end < tools.length ? { nextCursor: String(end) } : {}) };
  }

  /**
   * `tools/call`: a meta tool, or a listed catalog tool. What the model can fix (a wrong argument, a
   * tool that is not found, a server that is down) comes back as a result with `isError`, in words
   * it can act on; a tool never listed, or credentials refused, is a JSON-RPC error.
   */
  async call(name: string, args: JsonObject, scope: CallScope): Promise<CallToolResult> {
    // The bounds CallTool holds arguments to, before anything walks them (the checks, the encoding
    // of the in-process call): a tool's own arguments, and tool_call's of the tool it calls.
    const shape = argumentsShapeProblem(name === "tool_call" ? args.arguments : args);
    if (shape !== undefined) return failure(shape);
    try {
      if (isMetaTool(name)) {
        const problems = META_CHECKERS.get(name)?.(args) ?? [];
        if (problems.length > 0) return failure(repairMessage(name, problems));
        return await runMetaTool(name, args, this.clients, scope, this.mode === "activated");
      }
      if (!(await this.isListed(name, scope)))
        throw new JsonRpcRefusal(
          ErrorCode.InvalidParams,
          `unknown tool ${JSON.stringify(name)}: find tools with tool_search, call them with tool_call`,
        );
      return await callTool(name, args, this.clients, scope);
    } catch (error) {
      return resultOfError(error);
    }
  }

  /**
   * Whether a call (of a meta tool that may activate tools) changed the activated list since the
   * client was last given it; the new list is what the client gets next. Never for a fixed list.
   */
  async changed(name: string, scope: CallScope): Promise<boolean> {
    if (this.mode !== "activated" || (name !== "tool_get" && name !== "tool_call")) return false;
    // A client that never listed reads the list when it does: nothing to announce.
    if (this.listing === undefined) return false;
    const given = namesOf(await this.listing.catch(() => undefined));
    this.listing = undefined;
    return namesOf(await this.listed(scope)) !== given;
  }

  /** A catalog tool the session lists; an activated list is read again before a name is refused. */
  private async isListed(name: string, scope: CallScope): Promise<boolean> {
    if ((await this.listed(scope)).catalogTools.has(name)) return true;
    if (this.mode !== "activated") return false;
    this.listing = undefined;
    return (await this.listed(scope)).catalogTools.has(name);
  }

  private listed(scope: CallScope): Promise<Listing> {
    this.listing ??= this.read(scope).catch((error: unknown) => {
      this.listing = undefined;
      throw error instanceof ConnectError ? rpcError(error) : error;
    });
    return this.listing;
  }

  /**
   * Dispatch mode's payload: the discovery tools, tool_call and the always-visible tools; an activated
   * list adds the tools the session's payload holds besides, in the payload's order.
   */
  private async read(scope: CallScope): Promise<Listing> {
    const fixed = await this.payload(scope, true);
    const listed = new Set(fixed.map((tool) => tool.name));
    const tools =
      this.mode === "fixed"
        ? fixed
        : [...fixed, ...(await this.payload(scope, false)).filter((tool) => !listed.has(tool.name))];
    const catalogTools = new Set(tools.map((tool) => tool.name).filter((name) => !isMetaTool(name)));
    return { tools, catalogTools };
  }

  /** The caller's tool payload (with the discovery tools) as MCP tools, under their wayfind names. */
  private async payload(scope: CallScope, dispatch: boolean): Promise<McpTool[]> {
    const payload = await this.clients.tools.renderToolPayload(
      { caller: scope.caller, provider: Provider.ANTHROPIC, dispatch, includeDiscoveryTools: true },
      { headers: scope.headers, signal: scope.signal },
    );
    const provided = JSON.parse(payload.payloadJson) as {
      name: string;
      description?: string;
      input_schema: McpTool["inputSchema"];
    }[];
    const renamed = new Map(payload.nameMappings.map((m) => [m.providerName, m.toolName]));
    return provided.map(
      (tool): McpTool => ({
        name: renamed.get(tool.name) ?? tool.name,
        description: tool.description ?? "",
        inputSchema: tool.input_schema,
      }),
    );
  }
}

function namesOf(listing: Listing | undefined): string {
  return listing ? listing.tools.map((tool) => tool.name).join("\n") : "";
}

function failure(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/** Codes whose message tells the model what to do next; the rest are the client's or operator's. */
const MODEL_FIXABLE = new Set([
  Code.InvalidArgument,
  Code.NotFound,
  Code.FailedPrecondition,
  Code.DeadlineExceeded,
  Code.Unavailable,
  Code.ResourceExhausted,
  Code.OutOfRange,
  Code.Aborted,
]);

function resultOfError(error: unknown): CallToolResult {
  if (error instanceof ConnectError) {
    if (MODEL_FIXABLE.has(error.code)) return failure(error.rawMessage);
    throw rpcError(error);
  }
  throw error;
}

/** A refusal the model cannot fix (credentials, roles, cancellation, a fault) as a JSON-RPC error. */
export function rpcError(error: ConnectError): JsonRpcRefusal {
  const code =
    error.code === Code.Internal || error.code === Code.Unknown
      ? ErrorCode.InternalError
      : ErrorCode.InvalidRequest;
  return new JsonRpcRefusal(code, `${Code[error.code]}: ${error.rawMessage}`);
}
