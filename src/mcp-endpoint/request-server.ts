/**
 * The MCP server that answers one request of the 2026-07-28 revision (an SDK 2.x `Server`, made for
 * that request and gone with it): the answers a 2025-11-25 session gets (answers.ts), with no session
 * behind them. Its tool list is the fixed one; its lists carry cache hints, `private` since what a
 * caller sees depends on who it is.
 */
import type { CacheHint, ProgressToken, ServerContext } from "@modelcontextprotocol/server";
import { Server } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { Caller } from "../caller/caller.ts";
import type { JsonObject } from "../json.ts";
import type { McpGateway } from "../sources/mcp-gateway.ts";
import type { SessionCall } from "../tools/mcp-session.ts";
import { type AskedBy, INSTRUCTIONS, McpAnswers, refusalOf } from "./answers.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { SessionTools } from "./session-tools.ts";
import { SKILLS_EXTENSION_ID } from "./skill-manifests.ts";

/**
 * How long a client may reuse a list before it asks again. Short: the catalog, the caller's
 * visibility and the servers behind wayfind change without a session to tell.
 */
const LIST_HINT: CacheHint = { ttlMs: 30_000, cacheScope: "private" };

/** Who one request acts as, and how its RPCs are made. */
export interface RequestCaller {
  /** The caller the request acts as, admitted as an RPC is. */
  readonly caller: Caller;
  /** What the RPCs made for the request carry: its caller context, credentials and cancellation. */
  scope(signal: AbortSignal, call: SessionCall): CallScope;
}

export interface RequestServerOptions extends RequestCaller {
  readonly clients: WayfindClients;
  readonly gateway: McpGateway | undefined;
  readonly version: string;
}

export function requestServer(options: RequestServerOptions): Server {
  const answers = new McpAnswers(
    options.clients,
    options.gateway,
    new SessionTools(options.clients, "fixed"),
  );
  const server = new Server(
    { name: "wayfind", version: options.version },
    {
      capabilities: {
        tools: {},
        prompts: {},
        resources: {},
        ...(answers.serves ? { completions: {} } : {}),
        extensions: { [SKILLS_EXTENSION_ID]: {} },
      },
      instructions: INSTRUCTIONS,
      cacheHints: {
        "tools/list": LIST_HINT,
        "prompts/list": LIST_HINT,
        "resources/list": LIST_HINT,
        "resources/templates/list": LIST_HINT,
        // A resource of a server behind wayfind may change at any time.
        "resources/read": { ttlMs: 0, cacheScope: "private" },
      },
    },
  );

  /** The request as wayfind answers it: its RPCs' scope, and how it reaches the servers behind wayfind. */
  const asked = (ctx: ServerContext): AskedBy => {
    const call = requestCall(ctx);
    return {
      scope: options.scope(ctx.mcpReq.signal, call),
      through: () => ({ caller: options.caller, session: call, signal: ctx.mcpReq.signal }),
    };
  };
  /** A handler whose errors are answered in JSON-RPC's words. */
  const handled =
    <R, T>(run: (request: R, ctx: ServerContext) => Promise<T>) =>
    async (request: R, ctx: ServerContext): Promise<T> => {
      try {
        return await run(request, ctx);
      } catch (error) {
        throw refusalOf(error);
      }
    };

  server.setRequestHandler(
    "tools/list",
    handled(async (request, ctx) => answers.listTools(asked(ctx), request.params?.cursor) as never),
  );
  server.setRequestHandler(
    "tools/call",
    handled(
      async (request, ctx) =>
        answers.callTool(
          asked(ctx),
          request.params.name,
          (request.params.arguments ?? {}) as JsonObject,
        ) as never,
    ),
  );
  server.setRequestHandler(
    "prompts/list",
    handled(async (request, ctx) => answers.list("prompts", asked(ctx), request.params?.cursor) as never),
  );
  server.setRequestHandler(
    "resources/list",
    handled(async (request, ctx) => answers.list("resources", asked(ctx), request.params?.cursor) as never),
  );
  server.setRequestHandler(
    "resources/templates/list",
    handled(
      async (request, ctx) => answers.list("resourceTemplates", asked(ctx), request.params?.cursor) as never,
    ),
  );
  server.setRequestHandler(
    "prompts/get",
    handled(
      async (request, ctx) =>
        answers.getPrompt(
          asked(ctx),
          request.params.name,
          request.params.arguments as JsonObject | undefined,
        ) as never,
    ),
  );
  server.setRequestHandler(
    "resources/read",
    handled(async (request, ctx) => answers.readResource(asked(ctx), request.params.uri) as never),
  );
  server.setRequestHandler(
    "skills/list",
    { params: z.looseObject({ cursor: z.string().optional() }) },
    handled(async (params, ctx) => ({
      ...(await answers.listSkills(asked(ctx), params.cursor)),
      ...LIST_HINT,
    })),
  );
  server.setRequestHandler(
    "skills/get",
    { params: z.looseObject({ uri: z.string() }) },
    handled(async (params, ctx) => ({ ...(await answers.getSkill(asked(ctx), params.uri)), ...LIST_HINT })),
  );
  if (answers.serves)
    server.setRequestHandler(
      "completion/complete",
      handled(
        async (request, ctx) =>
          answers.complete(asked(ctx), request.params as unknown as JsonObject) as never,
      ),
    );
  return server;
}

/** What the request carries to the servers it reaches: no session client, and its progress sink. */
function requestCall(ctx: ServerContext): SessionCall {
  const progressToken = ctx.mcpReq._meta?.progressToken as ProgressToken | undefined;
  return {
    requestId: ctx.mcpReq.id,
    onProgress:
      progressToken === undefined
        ? undefined
        : (progress) => {
            ctx.mcpReq
              .notify({ method: "notifications/progress", params: { ...progress, progressToken } })
              .catch(() => undefined);
          },
  };
}
