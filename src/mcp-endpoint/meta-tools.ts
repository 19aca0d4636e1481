/**
 * The tools every MCP session lists whatever the catalog holds — `tool_search`, `tool_get`,
 * `tool_call`, `skill_search`, `skill_get`, `skill_list` (definitions: src/discovery-tools) — each
 * answered by the wayfind RPC of the same purpose, called with the session's credentials. Answers
 * are compact JSON text: what a model reads, in as few tokens as it can be.
 */

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client, ContextValues } from "@connectrpc/connect";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type CallerContextSchema, SearchType } from "../../gen/ts/wayfind/v1/common_pb.ts";
import { SkillFormat, type SkillService, TaskType } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import {
  ActivationScope,
  type CallToolResponse,
  type ToolDiscoveryService,
} from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { SEARCH_TYPES, TASK_TYPES } from "../api-enums/enums.ts";
import type { JsonObject } from "../json.ts";

/** The wayfind services, as generated clients on the in-process transport. */
export interface WayfindClients {
  readonly tools: Client<typeof ToolDiscoveryService>;
  readonly skills: Client<typeof SkillService>;
}

/**
 * What one MCP request calls wayfind with: its caller, credentials and cancellation, and the session
 * call a CallTool carries to its MCP server (src/tools/mcp-session.ts).
 */
export interface CallScope {
  readonly caller: MessageInitShape<typeof CallerContextSchema>;
  readonly headers: Headers;
  readonly signal: AbortSignal;
  readonly contextValues: ContextValues;
}

const META_TOOL_NAMES = [
  "tool_search",
  "tool_get",
  "tool_call",
  "skill_search",
  "skill_get",
  "skill_list",
] as const;
type MetaToolName = (typeof META_TOOL_NAMES)[number];

export function isMetaTool(name: string): name is MetaToolName {
  return (META_TOOL_NAMES as readonly string[]).includes(name);
}

/**
 * Runs meta tool `name` with arguments already checked against its schema. `activateLoaded`: the
 * tools `tool_get` loads are activated for the session's run, so a session that lists activated
 * tools lists them next.
 */
export async function runMetaTool(
  name: MetaToolName,
  args: JsonObject,
  clients: WayfindClients,
  scope: CallScope,
  activateLoaded = false,
): Promise<CallToolResult> {
  const options = { headers: scope.headers, signal: scope.signal };
  const { caller } = scope;
  switch (name) {
    case "tool_search": {
      const found = await clients.tools.searchTools(
        {
          caller,
          query: String(args.query),
          searchType: SEARCH_TYPES.protoOfName(args.search_type) ?? SearchType.FTS,
          limit: typeof args.limit === "number" ? args.limit : 0,
        },
        options,
      );
      return json({
        tools: found.tools.map((t) => ({ name: t.name, description: t.description, score: round(t.score) })),
        search_id: found.searchId,
      });
    }
    case "tool_get": {
      const got = await clients.tools.getTools(
        {
          caller,
          names: (args.names as string[]) ?? [],
          includeSchemas: true,
          includeExamples: args.include_examples !== false,
        },
        options,
      );
      if (activateLoaded && got.tools.length > 0)
        await clients.tools.activateTools(
          {
            caller,
            names: got.tools.map((t) => t.name),
            scope: ActivationScope.RUN,
            reason: "loaded with tool_get on the MCP endpoint",
          },
          options,
        );
      return json({
        tools: got.tools.map((t) => ({
          name: t.name,
          description: t.description,
          input_schema: t.argsSchema ?? { type: "object" },
          ...(t.examples.length > 0
            ? { examples: t.examples.map((e) => ({ args: e.args ?? {}, description: e.description })) }
            : {}),
        })),
        ...(got.notFound.length > 0 ? { not_found: got.notFound } : {}),
      });
    }
    case "tool_call":
      return callTool(String(args.name), (args.arguments as JsonObject | undefined) ?? {}, clients, scope);
    case "skill_search": {
      const found = await clients.skills.searchSkills(
        {
          caller,
          query: String(args.query),
          limit: typeof args.limit === "number" ? args.limit : 0,
          taskType: taskType(args.task_type),
        },
        options,
      );
      return json({
        skills: found.skills.map((s) => ({
          name: s.name,
          description: s.description,
          score: round(s.score),
        })),
        search_id: found.searchId,
      });
    }
    case "skill_get": {
      const got = await clients.skills.getSkills(
        {
          caller,
          names: (args.names as string[]) ?? [],
          format: SkillFormat.INJECTION,
          maxTokens: typeof args.max_tokens === "number" ? args.max_tokens : 0,
        },
        options,
      );
      return { content: [{ type: "text", text: got.formattedContext }] };
    }
    case "skill_list": {
      const page = await clients.skills.listSkills(
        {
          caller,
          pageSize: typeof args.page_size === "number" ? args.page_size : 0,
          pageToken: typeof args.page_token === "string" ? args.page_token : "",
          taskType: taskType(args.task_type),
        },
        options,
      );
      return json({
        skills: page.skills.map((s) => ({ name: s.name, description: s.description })),
        ...(page.nextPageToken ? { next_page_token: page.nextPageToken } : {}),
      });
    }
  }
}

/** A tool of the catalog, executed by its MCP server (CallTool): its result, unchanged. */
export async function callTool(
  name: string,
  args: JsonObject,
  clients: WayfindClients,
  scope: CallScope,
): Promise<CallToolResult> {
  const called: CallToolResponse = await clients.tools.callTool(
    { caller: scope.caller, name, arguments: args },
    { headers: scope.headers, signal: scope.signal, contextValues: scope.contextValues },
  );
  return {
    content: called.content as CallToolResult["content"],
    ...(called.structuredContent ? { structuredContent: called.structuredContent } : {}),
    ...(called.isError ? { isError: true } : {}),
  };
}

function json(value: JsonObject): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }] };
}

function round(score: number): number {
  return Math.round(score * 1000) / 1000;
}

function taskType(value: unknown): TaskType {
  return TASK_TYPES.protoOfName(value) ?? TaskType.UNSPECIFIED;
}
