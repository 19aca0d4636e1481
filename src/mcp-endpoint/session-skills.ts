/**
 * Skills as MCP prompts, for clients that offer them to their user or model: `prompts/list` is the
 * caller's skills (ListSkills, a page at a time) and `prompts/get` a skill's text, ready to inject
 * (GetSkills) — slash commands in Claude Code, prompt pickers elsewhere. (As resources and as the
 * skills extension: skill-manifests.ts.) Visibility is the skill RPCs': a hidden skill reads exactly
 * like a missing one.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { type GetSkillsResponse, SkillFormat, type SkillSummary } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import type { JsonObject } from "../json.ts";
import { LIMITS } from "../limits.ts";
import { JsonRpcRefusal } from "../tools/mcp-session.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { rpcError } from "./session-tools.ts";

/** JSON-RPC code of an unknown resource (MCP specification, resources). */
const RESOURCE_NOT_FOUND = -32002;

/** A page of the caller's skills as items of a list, and the token of the next page. */
export interface SkillsPage {
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

export function skillPrompts(clients: WayfindClients, scope: CallScope, token: string): Promise<SkillsPage> {
  return skillItems(clients, scope, token, (skill) => ({
    name: skill.name,
    ...(skill.title ? { title: skill.title } : {}),
    description: skill.description,
  }));
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

/** A page of the caller's skills (ListSkills), each made an item of a list by `item`. */
export async function skillItems(
  clients: WayfindClients,
  scope: CallScope,
  token: string,
  item: (skill: SkillSummary) => JsonObject,
): Promise<SkillsPage> {
  const page = await asSkillError(
    clients.skills.listSkills(
      { caller: scope.caller, pageSize: LIMITS.listSkillsPageSize.max, pageToken: token },
      { headers: scope.headers, signal: scope.signal },
    ),
  );
  return { items: page.skills.map(item), next: page.nextPageToken || undefined };
}

/** A skill and its text, ready to inject; undefined when the caller has no such skill (or may not see it). */
async function skillText(clients: WayfindClients, scope: CallScope, name: string) {
  const got = await getSkill(clients, scope, name, SkillFormat.INJECTION);
  const skill = got?.skills[0];
  if (got === undefined || skill === undefined) return undefined;
  return { skill, text: got.formattedContext };
}

/** GetSkills of the one skill `name`; undefined when the caller has no such skill (or may not see it). */
export function getSkill(
  clients: WayfindClients,
  scope: CallScope,
  name: string,
  format: SkillFormat,
): Promise<GetSkillsResponse | undefined> {
  return asSkillError(
    clients.skills
      .getSkills(
        { caller: scope.caller, names: [name], format },
        { headers: scope.headers, signal: scope.signal },
      )
      .catch((error: unknown) => {
        if (error instanceof ConnectError && error.code === Code.NotFound) return undefined;
        throw error;
      }),
  );
}

/** A refused skill RPC as the JSON-RPC error a prompt, resource or skills request gets. */
async function asSkillError<T>(call: Promise<T>): Promise<T> {
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
