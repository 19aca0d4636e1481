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
import {
  type ClientAnswers,
  clientAnswersOf,
  type SessionCall,
  type SessionClient,
} from "../tools/mcp-session.ts";
import { type AskedBy, INSTRUCTIONS, McpAnswers, refusalOf } from "./answers.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import type { Rounds, RoundTarget } from "./rounds.ts";
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
  /** The id of the principal its credentials are (a call's rounds are bound to it). */
  readonly principal: string;
  /** What the RPCs made for the request carry: its caller context, credentials and cancellation. */
  scope(signal: AbortSignal, call: SessionCall): CallScope;
}

export interface RequestServerOptions extends RequestCaller {
  readonly clients: WayfindClients;
  readonly gateway: McpGateway | undefined;
  readonly version: string;
  /** The calls of this process waiting for their client's next round. */
  readonly rounds: Rounds;
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
        // The same for every caller: what wayfind and the servers behind it offer.
        "server/discover": { ttlMs: 60_000, cacheScope: "public" },
      },
    },
  );

  /**
   * The request as wayfind answers it: its RPCs' scope, and how it reaches the servers behind wayfind
   * (with `client` when they may ask it something, until `signal` ends the call).
   */
  const asked = (ctx: ServerContext, client?: SessionClient, signal = ctx.mcpReq.signal): AskedBy => {
    const call = requestCall(ctx, client);
    return {
      scope: options.scope(signal, call),
      through: () => ({ caller: options.caller, session: call, signal }),
    };
  };
  /**
   * A request the servers behind wayfind may ask the client about on the way: over rounds when the
   * client declared what it answers (rounds.ts), at once otherwise; a retry goes on where it was.
   */
  const inRounds = (
    ctx: ServerContext,
    target: Pick<RoundTarget, "method" | "name">,
    run: (asked: AskedBy) => Promise<JsonObject>,
  ): Promise<JsonObject> => {
    const call = { tenant: options.caller.tenantId, principal: options.principal, ...target };
    const state = ctx.mcpReq.requestState();
    if (typeof state === "string") return options.rounds.resume(state, call, ctx.mcpReq.inputResponses ?? {});
    const answers = declaredAnswers(ctx);
    if (Object.keys(answers).length === 0) return run(asked(ctx));
    return options.rounds.start(call, answers, (client, signal) => run(asked(ctx, client, signal)));
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
    handled(async (request, ctx) => {
      const { name } = request.params;
      const args = (request.params.arguments ?? {}) as JsonObject;
      return inRounds(ctx, { method: "tools/call", name }, (by) => answers.callTool(by, name, args)) as never;
    }),
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
        inRounds(ctx, { method: "prompts/get", name: request.params.name }, (by) =>
          answers.getPrompt(by, request.params.name, request.params.arguments as JsonObject | undefined),
        ) as never,
    ),
  );
  server.setRequestHandler(
    "resources/read",
    handled(
      async (request, ctx) =>
        inRounds(ctx, { method: "resources/read", name: request.params.uri }, (by) =>
          answers.readResource(by, request.params.uri),
        ) as never,
    ),
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

/** What the client declared in the request's `_meta` that it answers: sampling, elicitation, roots. */
function declaredAnswers(ctx: ServerContext): ClientAnswers {
  const envelope = (ctx.mcpReq.envelope ?? {}) as Record<string, unknown>;
  return clientAnswersOf(
    (envelope["io.modelcontextprotocol/clientCapabilities"] ?? {}) as Record<string, unknown>,
  );
}

/**
 * What the request carries to the servers it reaches: the call's client when they may ask it
 * something (none otherwise), and its progress sink (the first round's: later rounds have none).
 */
function requestCall(ctx: ServerContext, client: SessionClient | undefined): SessionCall {
  const progressToken = ctx.mcpReq._meta?.progressToken as ProgressToken | undefined;
  return {
    ...(client === undefined ? {} : { client }),
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
