/**
 * What wayfind's `/mcp` answers, whichever protocol era asks: the tools (session-tools.ts), wayfind's
 * skills as prompts and resources (session-skills.ts), and what the MCP servers behind wayfind offer
 * besides tools (src/sources/mcp-gateway.ts). A 2025-11-25 session (session-server.ts) and a
 * 2026-07-28 request (request-server.ts) wire the same answers to their own SDK's handlers.
 */
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { WayfindError } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import type { GatewayRequest, ListKind, McpGateway } from "../sources/mcp-gateway.ts";
import { JsonRpcRefusal } from "../tools/mcp-session.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { listPage } from "./session-lists.ts";
import { skillPrompt, unknownPrompt, unknownResource } from "./session-skills.ts";
import type { SessionTools } from "./session-tools.ts";
import { getSkillEntry, listSkillEntries, readSkillManifest, SKILL_SCHEME } from "./skill-manifests.ts";

/** What wayfind tells a client about how to use it (initialize, server/discover). */
export const INSTRUCTIONS =
  "Find the tool you need with tool_search, load its schema with tool_get, then call it with tool_call. " +
  "skill_search and skill_get find step-by-step procedures.";

/** One MCP request as wayfind answers it: how it calls wayfind's RPCs, and the servers behind wayfind. */
export interface AskedBy {
  readonly scope: CallScope;
  /** The request as the MCP servers behind wayfind get it, its caller admitted (throws when refused). */
  through(): GatewayRequest;
}

export class McpAnswers {
  constructor(
    private readonly clients: WayfindClients,
    private readonly gateway: McpGateway | undefined,
    readonly tools: SessionTools,
  ) {}

  /** Whether any MCP server behind wayfind offers prompts, resources or completions. */
  get serves(): boolean {
    return this.gateway?.serves === true;
  }

  listTools(asked: AskedBy, cursor: string | undefined): Promise<JsonObject> {
    return this.tools.list(asked.scope, cursor) as Promise<JsonObject>;
  }

  callTool(asked: AskedBy, name: string, args: JsonObject): Promise<JsonObject> {
    return this.tools.call(name, args, asked.scope) as Promise<JsonObject>;
  }

  list(kind: ListKind, asked: AskedBy, cursor: string | undefined): Promise<JsonObject> {
    return listPage(kind, this.clients, this.gateway, asked.scope, () => asked.through(), cursor);
  }

  async getPrompt(asked: AskedBy, name: string, args: JsonObject | undefined): Promise<JsonObject> {
    const found =
      (await skillPrompt(this.clients, asked.scope, name)) ??
      (await this.gateway?.getPrompt(asked.through(), name, args));
    if (found === undefined) throw unknownPrompt(name);
    return found;
  }

  /** `skills/list` of the skills extension: a page of the caller's skills. */
  listSkills(asked: AskedBy, cursor: string | undefined): Promise<JsonObject> {
    return listSkillEntries(this.clients, asked.scope, cursor);
  }

  /** `skills/get` of the skills extension: the entry of the skill whose `SKILL.md` is at `uri`. */
  getSkill(asked: AskedBy, uri: string): Promise<JsonObject> {
    return getSkillEntry(this.clients, asked.scope, uri);
  }

  async readResource(asked: AskedBy, uri: string): Promise<JsonObject> {
    const found = uri.startsWith(SKILL_SCHEME)
      ? await readSkillManifest(this.clients, asked.scope, uri)
      : await this.gateway?.readResource(asked.through(), uri);
    if (found === undefined) throw unknownResource(uri);
    return found;
  }

  /** `completion/complete`: the servers' completions; a skill's prompt completes to nothing. */
  async complete(asked: AskedBy, params: JsonObject): Promise<JsonObject> {
    const found = await this.gateway?.complete(asked.through(), params);
    if (found !== undefined) return found;
    const ref = (params.ref ?? {}) as { type?: string; name?: string; uri?: string };
    const name = String(ref.name ?? "");
    if (ref.type === "ref/prompt" && (await skillPrompt(this.clients, asked.scope, name)) !== undefined)
      return { completion: { values: [] } };
    throw ref.type === "ref/prompt" ? unknownPrompt(name) : unknownResource(String(ref.uri ?? ""));
  }
}

/**
 * An error as the JSON-RPC error a client reads, in its own words (never prefixed twice): a refusal
 * as it is; wayfind's own errors with their code's name, as the RPCs' errors read over /mcp.
 */
export function refusalOf(error: unknown): unknown {
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
