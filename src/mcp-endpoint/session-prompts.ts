/**
 * Skills as MCP prompts: `prompts/list` is the caller's skills (ListSkills, a page at a time) and
 * `prompts/get` a skill's text, ready to inject (GetSkills), for clients that offer prompts to their
 * user — slash commands in Claude Code, prompt pickers elsewhere. Visibility is the skill RPCs'.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorCode, type GetPromptResult, McpError, type Prompt } from "@modelcontextprotocol/sdk/types.js";
import { SkillFormat } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { LIMITS } from "../limits.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { rpcError } from "./session-tools.ts";

export async function listPrompts(
  clients: WayfindClients,
  scope: CallScope,
  cursor: string | undefined,
): Promise<{ prompts: Prompt[]; nextCursor?: string }> {
  const page = await asPromptError(
    clients.skills.listSkills(
      { caller: scope.caller, pageSize: LIMITS.listSkillsPageSize.max, pageToken: cursor ?? "" },
      { headers: scope.headers, signal: scope.signal },
    ),
  );
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
  // A hidden skill reads exactly like a missing one.
  const unknown = new McpError(ErrorCode.InvalidParams, `unknown prompt ${JSON.stringify(name)}`);
  const got = await asPromptError(
    clients.skills.getSkills(
      { caller: scope.caller, names: [name], format: SkillFormat.INJECTION },
      { headers: scope.headers, signal: scope.signal },
    ),
    unknown,
  );
  const skill = got.skills[0];
  if (skill === undefined) throw unknown;
  return {
    description: skill.description,
    messages: [{ role: "user", content: { type: "text", text: got.formattedContext } }],
  };
}

/** A refused skill RPC as the JSON-RPC error a prompt request gets (`notFound` for NOT_FOUND). */
async function asPromptError<T>(call: Promise<T>, notFound?: McpError): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    if (notFound && error.code === Code.NotFound) throw notFound;
    // The prompt's own parameters are at fault; anything else is refused as a tool call is.
    if (error.code === Code.InvalidArgument || error.code === Code.NotFound)
      throw new McpError(ErrorCode.InvalidParams, `${Code[error.code]}: ${error.rawMessage}`);
    throw rpcError(error);
  }
}
