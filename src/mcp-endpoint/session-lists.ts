/**
 * The lists a session reads — prompts, resources, resource templates — as one list: wayfind's own
 * skills first (session-skills.ts), then what each MCP server behind wayfind offers, in the config's
 * order (src/sources/mcp-gateway.ts). A cursor says where in it a page starts; clients pass it back
 * as they got it.
 */
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import type { JsonObject } from "../json.ts";
import type { GatewayRequest, ListKind, ListPosition, McpGateway } from "../sources/mcp-gateway.ts";
import { JsonRpcRefusal } from "../tools/mcp-session.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { skillPrompts } from "./session-skills.ts";
import { skillResources } from "./skill-manifests.ts";

/** Where a page starts: a page of the skills (by ListSkills' token), or of the servers. */
type Position = { readonly skills: string } | { readonly servers: ListPosition };

/** The longest cursor read back. */
const MAX_CURSOR_CHARS = 4_096;

/** The field of each list's answer. */
const FIELDS: Readonly<Record<ListKind, string>> = {
  prompts: "prompts",
  resources: "resources",
  resourceTemplates: "resourceTemplates",
};

export async function listPage(
  kind: ListKind,
  clients: WayfindClients,
  gateway: McpGateway | undefined,
  scope: CallScope,
  request: () => GatewayRequest,
  cursor: string | undefined,
): Promise<JsonObject> {
  const first: Position =
    kind === "resourceTemplates" ? { servers: { server: 0, cursor: undefined } } : { skills: "" };
  const position = cursor === undefined ? first : decode(cursor);
  const servesAny = gateway?.serves === true;
  let items: JsonObject[] = [];
  let next: Position | undefined;
  if ("skills" in position) {
    const page =
      kind === "prompts"
        ? await skillPrompts(clients, scope, position.skills)
        : await skillResources(clients, scope, position.skills);
    items = page.items;
    next =
      page.next !== undefined
        ? { skills: page.next }
        : servesAny
          ? { servers: { server: 0, cursor: undefined } }
          : undefined;
    // Skills may end on a full page: the servers' first page goes with it when it would be empty.
    if (items.length > 0 || next === undefined) return answer(kind, items, next);
  }
  const from =
    "servers" in position ? position.servers : next && "servers" in next ? next.servers : undefined;
  if (from === undefined || gateway === undefined) return answer(kind, items, undefined);
  const page = await gateway.listPage(kind, request(), from);
  return answer(
    kind,
    [...items, ...page.items],
    page.next === undefined ? undefined : { servers: page.next },
  );
}

function answer(kind: ListKind, items: JsonObject[], next: Position | undefined): JsonObject {
  return { [FIELDS[kind]]: items, ...(next === undefined ? {} : { nextCursor: encode(next) }) };
}

function encode(position: Position): string {
  const raw =
    "skills" in position
      ? ["k", position.skills]
      : ["s", position.servers.server, position.servers.cursor ?? null];
  return Buffer.from(JSON.stringify(raw)).toString("base64url");
}

function decode(cursor: string): Position {
  const refused = new JsonRpcRefusal(
    ErrorCode.InvalidParams,
    `cursor ${JSON.stringify(cursor.slice(0, 100))} is not one this server gave`,
  );
  if (cursor.length > MAX_CURSOR_CHARS) throw refused;
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw refused;
  }
  if (!Array.isArray(raw)) throw refused;
  const [kind, place, upstream] = raw as unknown[];
  if (kind === "k" && typeof place === "string" && raw.length === 2) return { skills: place };
  if (
    kind === "s" &&
    typeof place === "number" &&
    Number.isInteger(place) &&
    place >= 0 &&
    (upstream === null || typeof upstream === "string") &&
    raw.length === 3
  )
    return { servers: { server: place, cursor: upstream ?? undefined } };
  throw refused;
}
