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
import { z } from "zod";
import type { Caller } from "../caller/caller.ts";
import type { McpToolList } from "../config/index.ts";
import type { JsonObject } from "../json.ts";
import type { GatewayRequest, McpGateway } from "../sources/mcp-gateway.ts";
import { JsonRpcRefusal, type SessionCall } from "../tools/mcp-session.ts";
import { type AskedBy, INSTRUCTIONS, McpAnswers, refusalOf } from "./answers.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { SessionClientOf } from "./session-client.ts";
import { unknownResource } from "./session-skills.ts";
import { SessionTools } from "./session-tools.ts";
import { SKILL_SCHEME, SKILLS_EXTENSION_ID } from "./skill-manifests.ts";

export type RequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The skills extension's requests (skill-manifests.ts), as the 1.x SDK routes a request by its schema. */
const META = z.looseObject({ progressToken: z.union([z.string(), z.number()]).optional() }).optional();
const LIST_SKILLS = z.object({
  method: z.literal("skills/list"),
  params: z.looseObject({ cursor: z.string().optional(), _meta: META }).optional(),
});
const GET_SKILL = z.object({
  method: z.literal("skills/get"),
  params: z.looseObject({ uri: z.string(), _meta: META }),
});

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
        extensions: { [SKILLS_EXTENSION_ID]: {} },
      },
      instructions: INSTRUCTIONS,
    },
  );
  // The SDK's clients ignore the cancellation of a request whose id is 0 (they test the id for
  // truthiness): the session's requests to its client are numbered from 1, so each can be cancelled.
  (server as unknown as { _requestMessageId: number })._requestMessageId = 1;
  const client = new SessionClientOf(server, options.id, options.tenant);
  const tools = new SessionTools(clients, options.toolList);
  const answers = new McpAnswers(clients, gateway, tools);
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
  const asked = (extra: RequestExtra, session: SessionCall): AskedBy => ({
    scope: options.scope(extra, session),
    through: () => ({ caller: options.admit(extra), session, signal: extra.signal }),
  });
  const through = (extra: RequestExtra, session: SessionCall): GatewayRequest =>
    asked(extra, session).through();

  server.setRequestHandler(
    ListToolsRequestSchema,
    handled(async (request, extra, session) =>
      answers.listTools(asked(extra, session), request.params?.cursor),
    ),
  );
  server.setRequestHandler(
    CallToolRequestSchema,
    handled(async (request, extra, session) => {
      const { name } = request.params;
      const result = await answers.callTool(
        asked(extra, session),
        name,
        (request.params.arguments ?? {}) as JsonObject,
      );
      // A change of the session's activated list the call made goes ahead of its result.
      if (await tools.changed(name, options.scope(extra, session)).catch(() => false))
        await extra.sendNotification({ method: "notifications/tools/list_changed" }).catch(() => undefined);
      return result as CallToolResult;
    }),
  );
  for (const [schema, kind] of [
    [ListPromptsRequestSchema, "prompts"],
    [ListResourcesRequestSchema, "resources"],
    [ListResourceTemplatesRequestSchema, "resourceTemplates"],
  ] as const)
    server.setRequestHandler(
      schema,
      handled(async (request, extra, session) =>
        answers.list(kind, asked(extra, session), request.params?.cursor),
      ),
    );
  server.setRequestHandler(
    GetPromptRequestSchema,
    handled(async (request, extra, session) =>
      answers.getPrompt(
        asked(extra, session),
        request.params.name,
        request.params.arguments as JsonObject | undefined,
      ),
    ),
  );
  server.setRequestHandler(
    ReadResourceRequestSchema,
    handled(async (request, extra, session) =>
      answers.readResource(asked(extra, session), request.params.uri),
    ),
  );
  server.setRequestHandler(
    LIST_SKILLS,
    handled(async (request, extra, session) =>
      answers.listSkills(asked(extra, session), request.params?.cursor),
    ),
  );
  server.setRequestHandler(
    GET_SKILL,
    handled(async (request, extra, session) => answers.getSkill(asked(extra, session), request.params.uri)),
  );
  if (gateway === undefined || !serves) return { server, client };

  server.setRequestHandler(
    CompleteRequestSchema,
    handled(async (request, extra, session) =>
      answers.complete(asked(extra, session), request.params as unknown as JsonObject),
    ),
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
