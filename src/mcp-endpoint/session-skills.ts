/**
 * Skills as MCP prompts and resources, for clients that offer them to their user or model:
 * - `prompts/list` is the caller's skills (ListSkills, a page at a time) and `prompts/get` a skill's
 *   text, ready to inject (GetSkills) — slash commands in Claude Code, prompt pickers elsewhere;
 * - `resources/list` the same skills as `skill://<name>` documents and `resources/read` one's text,
 *   for clients that attach resources to a conversation.
 * Visibility is the skill RPCs': a hidden skill reads exactly like a missing one.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { SkillFormat } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import type { JsonObject } from "../json.ts";
import { LIMITS } from "../limits.ts";
import { JsonRpcRefusal } from "../tools/mcp-session.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { rpcError } from "./session-tools.ts";

export const SKILL_SCHEME = "skill://";
/** JSON-RPC code of an unknown resource (MCP specification, resources). */
const RESOURCE_NOT_FOUND = -32002;

/** A page of the caller's skills as items of a list, and the token of the next page. */
interface SkillsPage {
  readonly items: JsonObject[];
  readonly next: string | undefined;
}

/** The error of a prompt the caller has none of: the same whether it is hidden or missing. */
export function unknownPrompt(name: string): JsonRpcRefusal {
  return new JsonRpcRefusal(ErrorCode.InvalidParams, `unknown prompt ${JSON.stringify(name.slice(0, 300))}`);
}

/**
 * The error of a resource the caller has none of: the same whether it is hidden or missing; its data
 * names the URI asked for (SEP-2164), as far as a URI reasonably goes.
 */
export function unknownResource(uri: string): JsonRpcRefusal {
  return new JsonRpcRefusal(RESOURCE_NOT_FOUND, `unknown resource ${JSON.stringify(uri.slice(0, 300))}`, {
    uri: uri.slice(0, 2_000),
  });
}

export async function skillPrompts(
  clients: WayfindClients,
  scope: CallScope,
  token: string,
): Promise<SkillsPage> {
  const page = await skillsPage(clients, scope, token);
  return {
    items: page.skills.map((skill) => ({
      name: skill.name,
      ...(skill.title ? { title: skill.title } : {}),
      description: skill.description,
    })),
    next: page.nextPageToken || undefined,
  };
}

/** A skill as a prompt; undefined when the caller has no such skill (or may not see it). */
export async function skillPrompt(
  clients: WayfindClients,
  scope: CallScope,
  name: string,
): Promise<JsonObject | undefined> {
  const found = await skillText(clients, scope, name);
  if (found === undefined) return undefined;
  return {
    description: found.skill.description,
    messages: [{ role: "user", content: { type: "text", text: found.text } }],
  };
}

export async function skillResources(
  clients: WayfindClients,
  scope: CallScope,
  token: string,
): Promise<SkillsPage> {
  const page = await skillsPage(clients, scope, token);
  return {
    items: page.skills.map((skill) => ({
      uri: `${SKILL_SCHEME}${skill.name}`,
      name: skill.name,
      ...(skill.title ? { title: skill.title } : {}),
      description: skill.description,
      mimeType: "text/markdown",
    })),
    next: page.nextPageToken || undefined,
  };
}

/** A `skill://` resource's text; undefined when the caller has no such skill (or may not see it). */
export async function skillResource(
  clients: WayfindClients,
  scope: CallScope,
  uri: string,
): Promise<JsonObject | undefined> {
  const found = await skillText(clients, scope, uri.slice(SKILL_SCHEME.length));
  return found === undefined
    ? undefined
    : { contents: [{ uri, mimeType: "text/markdown", text: found.text }] };
}

function skillsPage(clients: WayfindClients, scope: CallScope, token: string) {
  return asPromptError(
    clients.skills.listSkills(
      { caller: scope.caller, pageSize: LIMITS.listSkillsPageSize.max, pageToken: token },
      { headers: scope.headers, signal: scope.signal },
    ),
  );
}

/** A skill and its text, ready to inject; undefined when the caller has no such skill (or may not see it). */
async function skillText(clients: WayfindClients, scope: CallScope, name: string) {
  const got = await asPromptError(
    clients.skills
      .getSkills(
        { caller: scope.caller, names: [name], format: SkillFormat.INJECTION },
        { headers: scope.headers, signal: scope.signal },
      )
      .catch((error: unknown) => {
        if (error instanceof ConnectError && error.code === Code.NotFound) return undefined;
        throw error;
      }),
  );
  const skill = got?.skills[0];
  if (got === undefined || skill === undefined) return undefined;
  return { skill, text: got.formattedContext };
}

/** A refused skill RPC as the JSON-RPC error a prompt or resource request gets. */
async function asPromptError<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    // The request's own parameters are at fault; anything else is refused as a tool call is.
    if (error.code === Code.InvalidArgument || error.code === Code.NotFound)
      throw new JsonRpcRefusal(ErrorCode.InvalidParams, `${Code[error.code]}: ${error.rawMessage}`);
    throw rpcError(error);
  }
}
