/**
 * Skills as MCP prompts and resources, for clients that offer them to their user or model:
 * - `prompts/list` is the caller's skills (ListSkills, a page at a time) and `prompts/get` a skill's
 *   text, ready to inject (GetSkills) — slash commands in Claude Code, prompt pickers elsewhere;
 * - `resources/list` the same skills as `skill://<name>` documents and `resources/read` one's text,
 *   for clients that attach resources to a conversation.
 * Visibility is the skill RPCs': a hidden skill reads exactly like a missing one.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import {
  ErrorCode,
  type GetPromptResult,
  McpError,
  type Prompt,
  type ReadResourceResult,
  type Resource,
} from "@modelcontextprotocol/sdk/types.js";
import { SkillFormat } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { LIMITS } from "../limits.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { rpcError } from "./session-tools.ts";

const SKILL_SCHEME = "skill://";
/** JSON-RPC code of an unknown resource (MCP specification, resources). */
const RESOURCE_NOT_FOUND = -32002;

export async function listPrompts(
  clients: WayfindClients,
  scope: CallScope,
  cursor: string | undefined,
): Promise<{ prompts: Prompt[]; nextCursor?: string }> {
  const page = await skillsPage(clients, scope, cursor);
  return {
    prompts: page.skills.map((skill) => ({
      name: skill.name,
      ...(skill.title ? { title: skill.title } : {}),
      description: skill.description,
    })),
    ...(page.nextPageToken ? { nextCursor: page.nextPageToken } : {}),
  };
}

export async function getPrompt(
  clients: WayfindClients,
  scope: CallScope,
  name: string,
): Promise<GetPromptResult> {
  const unknown = new McpError(ErrorCode.InvalidParams, `unknown prompt ${JSON.stringify(name)}`);
  const { skill, text } = await skillText(clients, scope, name, unknown);
  return { description: skill.description, messages: [{ role: "user", content: { type: "text", text } }] };
}

export async function listResources(
  clients: WayfindClients,
  scope: CallScope,
  cursor: string | undefined,
): Promise<{ resources: Resource[]; nextCursor?: string }> {
  const page = await skillsPage(clients, scope, cursor);
  return {
    resources: page.skills.map((skill) => ({
      uri: `${SKILL_SCHEME}${skill.name}`,
      name: skill.name,
      ...(skill.title ? { title: skill.title } : {}),
      description: skill.description,
      mimeType: "text/markdown",
    })),
    ...(page.nextPageToken ? { nextCursor: page.nextPageToken } : {}),
  };
}

export async function readResource(
  clients: WayfindClients,
  scope: CallScope,
  uri: string,
): Promise<ReadResourceResult> {
  const unknown = new McpError(RESOURCE_NOT_FOUND, `unknown resource ${JSON.stringify(uri.slice(0, 300))}`);
  if (!uri.startsWith(SKILL_SCHEME)) throw unknown;
  const { text } = await skillText(clients, scope, uri.slice(SKILL_SCHEME.length), unknown);
  return { contents: [{ uri, mimeType: "text/markdown", text }] };
}

function skillsPage(clients: WayfindClients, scope: CallScope, cursor: string | undefined) {
  return asPromptError(
    clients.skills.listSkills(
      { caller: scope.caller, pageSize: LIMITS.listSkillsPageSize.max, pageToken: cursor ?? "" },
      { headers: scope.headers, signal: scope.signal },
    ),
  );
}

/** A skill and its text, ready to inject; `unknown` when the caller has no such skill (or may not see it). */
async function skillText(clients: WayfindClients, scope: CallScope, name: string, unknown: McpError) {
  const got = await asPromptError(
    clients.skills.getSkills(
      { caller: scope.caller, names: [name], format: SkillFormat.INJECTION },
      { headers: scope.headers, signal: scope.signal },
    ),
    unknown,
  );
  const skill = got.skills[0];
  if (skill === undefined) throw unknown;
  return { skill, text: got.formattedContext };
}

/** A refused skill RPC as the JSON-RPC error a prompt or resource request gets (`notFound` for NOT_FOUND). */
async function asPromptError<T>(call: Promise<T>, notFound?: McpError): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    if (notFound && error.code === Code.NotFound) throw notFound;
    // The request's own parameters are at fault; anything else is refused as a tool call is.
    if (error.code === Code.InvalidArgument || error.code === Code.NotFound)
      throw new McpError(ErrorCode.InvalidParams, `${Code[error.code]}: ${error.rawMessage}`);
    throw rpcError(error);
  }
}
