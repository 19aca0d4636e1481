/**
 * One session's MCP server (an SDK `Server`): what a client connected to wayfind's `/mcp` can ask —
 * the tools (session-tools.ts), wayfind's skills as prompts and resources (session-skills.ts), and
 * what the MCP servers behind wayfind offer besides tools (src/sources/mcp-gateway.ts) — and the way
 * back to the client for those servers' own requests and notifications (session-client.ts).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  type ProgressToken,
  ReadResourceRequestSchema,
  RootsListChangedNotificationSchema,
  type ServerNotification,
  type ServerRequest,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Caller } from "../caller/caller.ts";
import type { McpToolList } from "../config/index.ts";
import { WayfindError } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import type { GatewayRequest, McpGateway } from "../sources/mcp-gateway.ts";
import { JsonRpcRefusal, type SessionCall } from "../tools/mcp-session.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { SessionClientOf } from "./session-client.ts";
import { listPage } from "./session-lists.ts";
import {
  SKILL_SCHEME,
  skillPrompt,
  skillResource,
  unknownPrompt,
  unknownResource,
} from "./session-skills.ts";
import { SessionTools } from "./session-tools.ts";

export type RequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Resources one session may be subscribed to at once. */
const MAX_SUBSCRIPTIONS = 1_000;

export interface SessionServerOptions {
  readonly id: string;
  readonly tenant: string;
  readonly toolList: McpToolList;
  readonly clients: WayfindClients;
  readonly gateway: McpGateway | undefined;
  readonly version: string;
  /** What the RPCs made for a request carry: its caller context, credentials and cancellation. */
  scope(extra: RequestExtra, session: SessionCall): CallScope;
  /** The caller a request acts as, admitted as an RPC is (role, limits, binding); throws when refused. */
  admit(extra: RequestExtra): Caller;
}

export function sessionServer(options: SessionServerOptions): { server: Server; client: SessionClientOf } {
  const { clients, gateway } = options;
  const serves = gateway?.serves === true;
  const server = new Server(
    { name: "wayfind", version: options.version },
    {
      capabilities: {
        tools: { listChanged: options.toolList === "activated" },
        prompts: { listChanged: serves },
        resources: { listChanged: serves, subscribe: serves },
        ...(serves ? { completions: {}, logging: {} } : {}),
      },
      instructions:
        "Find the tool you need with tool_search, load its schema with tool_get, then call it with tool_call. " +
        "skill_search and skill_get find step-by-step procedures.",
    },
  );
  // The SDK's clients ignore the cancellation of a request whose id is 0 (they test the id for
  // truthiness): the session's requests to its client are numbered from 1, so each can be cancelled.
  (server as unknown as { _requestMessageId: number })._requestMessageId = 1;
  const client = new SessionClientOf(server, options.id, options.tenant);
  const tools = new SessionTools(clients, options.toolList);
  const subscriptions = new Set<string>();

  /**
   * A handler run with the request's session call (its client, and where its progress goes), its
   * stream marked open meanwhile; what it throws answered in JSON-RPC's words.
   */
  const handled =
    <R extends { params?: { _meta?: { progressToken?: ProgressToken } } }, T>(
      run: (request: R, extra: RequestExtra, session: SessionCall) => Promise<T>,
    ) =>
    async (request: R, extra: RequestExtra): Promise<T> => {
      const closed = client.answering(extra.requestId);
      try {
        return await run(request, extra, sessionCall(client, extra, request.params?._meta?.progressToken));
      } catch (error) {
        throw refusalOf(error);
      } finally {
        closed();
      }
    };
  const scope = (extra: RequestExtra, session: SessionCall) => options.scope(extra, session);
  const through = (extra: RequestExtra, session: SessionCall): GatewayRequest => ({
    caller: options.admit(extra),
    session,
    signal: extra.signal,
  });

  server.setRequestHandler(
    ListToolsRequestSchema,
    handled(async (request, extra, session) => tools.list(scope(extra, session), request.params?.cursor)),
  );
  server.setRequestHandler(
    CallToolRequestSchema,
    handled(async (request, extra, session) => {
      const { name } = request.params;
      const result = await tools.call(
        name,
        (request.params.arguments ?? {}) as JsonObject,
        scope(extra, session),
      );
      // A change of the session's activated list the call made goes ahead of its result.
      if (await tools.changed(name, scope(extra, session)).catch(() => false))
        await extra.sendNotification({ method: "notifications/tools/list_changed" }).catch(() => undefined);
      return result as CallToolResult;
    }),
  );
  server.setRequestHandler(
    ListPromptsRequestSchema,
    handled(async (request, extra, session) =>
      listPage(
        "prompts",
        clients,
        gateway,
        scope(extra, session),
        () => through(extra, session),
        request.params?.cursor,
      ),
    ),
  );
  server.setRequestHandler(
    GetPromptRequestSchema,
    handled(async (request, extra, session) => {
      const { name } = request.params;
      const args = request.params.arguments as JsonObject | undefined;
      const found =
        (await skillPrompt(clients, scope(extra, session), name)) ??
        (await gateway?.getPrompt(through(extra, session), name, args));
      if (found === undefined) throw unknownPrompt(name);
      return found;
    }),
  );
  server.setRequestHandler(
    ListResourcesRequestSchema,
    handled(async (request, extra, session) =>
      listPage(
        "resources",
        clients,
        gateway,
        scope(extra, session),
        () => through(extra, session),
        request.params?.cursor,
      ),
    ),
  );
  server.setRequestHandler(
    ListResourceTemplatesRequestSchema,
    handled(async (request, extra, session) =>
      listPage(
        "resourceTemplates",
        clients,
        gateway,
        scope(extra, session),
        () => through(extra, session),
        request.params?.cursor,
      ),
    ),
  );
  server.setRequestHandler(
    ReadResourceRequestSchema,
    handled(async (request, extra, session) => {
      const { uri } = request.params;
      const found = uri.startsWith(SKILL_SCHEME)
        ? await skillResource(clients, scope(extra, session), uri)
        : await gateway?.readResource(through(extra, session), uri);
      if (found === undefined) throw unknownResource(uri);
      return found;
    }),
  );
  if (gateway === undefined || !serves) return { server, client };

  server.setRequestHandler(
    CompleteRequestSchema,
    handled(async (request, extra, session) => {
      const params = request.params as unknown as JsonObject;
      const found = await gateway.complete(through(extra, session), params);
      if (found !== undefined) return found;
      // wayfind's skills take no arguments: a skill's prompt completes to nothing.
      const { ref } = request.params;
      if (
        ref.type === "ref/prompt" &&
        (await skillPrompt(clients, scope(extra, session), ref.name)) !== undefined
      )
        return { completion: { values: [] } };
      throw ref.type === "ref/prompt" ? unknownPrompt(ref.name) : unknownResource(ref.uri);
    }),
  );
  for (const [schema, subscribe] of [
    [SubscribeRequestSchema, true],
    [UnsubscribeRequestSchema, false],
  ] as const)
    server.setRequestHandler(
      schema,
      handled(async (request, extra, session) => {
        const { uri } = request.params;
        // wayfind's skills do not change under a session: subscribing to one is accepted, and quiet.
        if (uri.startsWith(SKILL_SCHEME)) return {};
        if (subscribe && !subscriptions.has(uri) && subscriptions.size >= MAX_SUBSCRIPTIONS)
          throw new JsonRpcRefusal(
            ErrorCode.InvalidRequest,
            `the session is subscribed to ${MAX_SUBSCRIPTIONS} resources, the most it may be; unsubscribe from one first`,
          );
        // Updates come on connections of the session's own.
        if (subscribe) client.subscribing();
        if (!(await gateway.subscribe(through(extra, session), uri, subscribe))) throw unknownResource(uri);
        if (subscribe) subscriptions.add(uri);
        else subscriptions.delete(uri);
        return {};
      }),
    );
  server.setRequestHandler(
    SetLevelRequestSchema,
    handled(async (request, extra) => {
      options.admit(extra);
      client.setLogLevel(request.params.level);
      await gateway.logLevelChanged(options.id);
      return {};
    }),
  );
  server.setNotificationHandler(RootsListChangedNotificationSchema, () => gateway.rootsChanged(options.id));
  return { server, client };
}

/** What a request carries to the servers it reaches: the session's client, and its progress sink. */
function sessionCall(
  client: SessionClientOf,
  extra: RequestExtra,
  progressToken: ProgressToken | undefined,
): SessionCall {
  return {
    client,
    requestId: extra.requestId,
    onProgress:
      progressToken === undefined
        ? undefined
        : (progress) => {
            extra
              .sendNotification({ method: "notifications/progress", params: { ...progress, progressToken } })
              .catch(() => undefined);
          },
  };
}

/**
 * An error as the JSON-RPC error a client reads, in its own words (never prefixed twice): a refusal
 * as it is; wayfind's own errors with their code's name, as the RPCs' errors read over /mcp.
 */
function refusalOf(error: unknown): unknown {
  if (!(error instanceof WayfindError)) return error;
  const code =
    error.code === "invalid_argument" || error.code === "not_found"
      ? ErrorCode.InvalidParams
      : error.code === "permission_denied" ||
          error.code === "unauthenticated" ||
          error.code === "failed_precondition"
        ? ErrorCode.InvalidRequest
        : ErrorCode.InternalError;
  return new JsonRpcRefusal(code, `${error.code.toUpperCase()}: ${error.message}`);
}
