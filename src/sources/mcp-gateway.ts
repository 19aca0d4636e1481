/**
 * What the MCP servers behind wayfind offer besides tools — prompts, resources, resource templates,
 * completions, resource subscriptions — served as one server's to a session of wayfind's MCP
 * endpoint (docs/mcp.md "Through wayfind"). Names are namespaced as tools are (`<namespace>.<name>`,
 * mcp_servers[].namespace); a resource keeps its URI and belongs to the server that listed it, or
 * whose template it fits. Each request goes on the connection mcp-sources.ts picks for the session.
 *
 * Who sees what is the tools' rule (src/access): an item is judged by its namespaced name, with its
 * server's tags. A server none of whose names the caller may see is never asked anything, so what it
 * holds is missing byte for byte; so is what a server the caller may use holds under a hidden name,
 * or does not hold: prompts and resources are looked up in the server's own listing first, and an
 * unknown one gets the same answer whether it is hidden or missing.
 */
import type { Logger } from "pino";
import type { AccessControl, CallerAccess } from "../access/index.ts";
import type { Caller } from "../caller/caller.ts";
import type { McpServerConfig } from "../config/index.ts";
import { WayfindError } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import type { SessionCall } from "../tools/mcp-session.ts";
import { mcpSourceId } from "./mcp.ts";
import type { McpCallLine } from "./mcp-calls.ts";
import type { McpSources } from "./mcp-sources.ts";
import { matchesTemplate } from "./uri-templates.ts";

/** One request of an MCP session, with whom it acts for. */
export interface GatewayRequest {
  readonly caller: Caller;
  readonly session: SessionCall;
  readonly signal: AbortSignal;
}

export type ListKind = "prompts" | "resources" | "resourceTemplates";

/** Each list: its method, the field of its answer, and what identifies an item. */
const LISTS: Readonly<Record<ListKind, { method: string; field: string; key: string }>> = {
  prompts: { method: "prompts/list", field: "prompts", key: "name" },
  resources: { method: "resources/list", field: "resources", key: "uri" },
  resourceTemplates: { method: "resources/templates/list", field: "resourceTemplates", key: "uriTemplate" },
};

/** Where a listing goes on: a server (by its place in the config) and the server's own cursor. */
export interface ListPosition {
  readonly server: number;
  readonly cursor: string | undefined;
}

/** Pages and items of one server's list read to know what it holds (prompts/get, resources/read). */
const MAX_PAGES_READ = 100;
const MAX_ITEMS_KEPT = 10_000;
/** A server that does not announce changes to its lists is listed again after this. */
const UNANNOUNCED_LIST_MS = 30_000;
/** Servers asked in turn for one page before an empty one is answered. */
const MAX_SERVERS_PER_PAGE = 32;

/** What one server holds of a list, as last read. */
interface Held {
  readonly version: number;
  readonly atMs: number;
  /** By key (name, URI, URI template): the server's item. */
  readonly items: ReadonlyMap<string, JsonObject>;
}

/** A visible server, the connection a request takes to it, and the caller's verdicts. */
interface Reached {
  readonly config: McpServerConfig;
  readonly line: McpCallLine;
  readonly access: CallerAccess;
}

export class McpGateway {
  private readonly kept = new WeakMap<McpCallLine, Partial<Record<ListKind, Held>>>();

  constructor(
    private readonly sources: McpSources,
    private readonly access: AccessControl,
    private readonly logger: Logger,
  ) {}

  /** Whether any server is configured (the endpoint offers the gateway's features then). */
  get serves(): boolean {
    return this.sources.configs.length > 0;
  }

  /**
   * A page of `kind` from the servers the caller may see, from `position`: each server's pages in
   * turn, in the config's order, its items namespaced and filtered; `next` = where the next page
   * starts, undefined after the last. A server that cannot be reached is left out, as a hidden one.
   */
  async listPage(
    kind: ListKind,
    request: GatewayRequest,
    position: ListPosition,
  ): Promise<{ items: JsonObject[]; next: ListPosition | undefined }> {
    const { method, field } = LISTS[kind];
    const configs = this.sources.configs;
    let at: ListPosition | undefined = position;
    for (
      let asked = 0;
      at !== undefined && at.server < configs.length && asked < MAX_SERVERS_PER_PAGE;
      asked++
    ) {
      const here: ListPosition = at;
      const following: ListPosition | undefined =
        here.server + 1 < configs.length ? { server: here.server + 1, cursor: undefined } : undefined;
      const reached = await this.reach(configs[here.server], request, kind);
      if (reached === undefined) {
        at = following;
        continue;
      }
      let answer: JsonObject;
      try {
        answer = await reached.line.request({
          method,
          params: here.cursor === undefined ? undefined : { cursor: here.cursor },
          about: `${method} of MCP server "${reached.config.name}"`,
          signal: request.signal,
          session: request.session,
        });
      } catch (error) {
        if (here.cursor !== undefined) throw error;
        this.leftOut(reached.config, error);
        at = following;
        continue;
      }
      const items = this.shown(reached, kind, answer[field]);
      const cursor =
        typeof answer.nextCursor === "string" && answer.nextCursor !== "" ? answer.nextCursor : undefined;
      at = cursor === undefined ? following : { server: here.server, cursor };
      if (items.length > 0) return { items, next: at };
    }
    return { items: [], next: at };
  }

  /** prompts/get of an upstream prompt; undefined = no server the caller may see has it. */
  async getPrompt(
    request: GatewayRequest,
    name: string,
    args: JsonObject | undefined,
  ): Promise<JsonObject | undefined> {
    const found = await this.findNamed(request, "prompts", name);
    if (found === undefined) return undefined;
    return found.reached.line.request({
      method: "prompts/get",
      params: { name: found.upstreamName, ...(args === undefined ? {} : { arguments: args }) },
      about: `the prompt "${name}"`,
      signal: request.signal,
      session: request.session,
    });
  }

  /** resources/read; undefined = no server the caller may see holds the URI. */
  async readResource(request: GatewayRequest, uri: string): Promise<JsonObject | undefined> {
    const owner = await this.ownerOf(request, uri);
    if (owner === undefined) return undefined;
    return owner.line.request({
      method: "resources/read",
      params: { uri },
      about: `the resource ${JSON.stringify(uri.slice(0, 200))}`,
      signal: request.signal,
      session: request.session,
    });
  }

  /**
   * completion/complete for an upstream prompt's argument or resource template's variable;
   * undefined = the caller may see no such prompt or template. A server that offers no completions
   * suggests none.
   */
  async complete(request: GatewayRequest, params: JsonObject): Promise<JsonObject | undefined> {
    const ref = params.ref as JsonObject;
    let reached: Reached | undefined;
    let upstreamRef = ref;
    if (ref.type === "ref/prompt") {
      const found = await this.findNamed(request, "prompts", String(ref.name));
      reached = found?.reached;
      upstreamRef = { ...ref, name: found?.upstreamName ?? "" };
    } else reached = await this.ownerOf(request, String(ref.uri));
    if (reached === undefined) return undefined;
    if ((await reached.line.capabilities()).completions === undefined) return { completion: { values: [] } };
    return reached.line.request({
      method: "completion/complete",
      params: { ...params, ref: upstreamRef },
      about: "completion/complete",
      signal: request.signal,
      session: request.session,
    });
  }

  /**
   * resources/subscribe (or unsubscribe) on the session's own connection to the resource's server;
   * false = the caller may see no such resource. A server that offers no subscriptions is said so.
   */
  async subscribe(request: GatewayRequest, uri: string, subscribe: boolean): Promise<boolean> {
    const owner = await this.ownerOf(request, uri);
    if (owner === undefined) return false;
    const { line } = owner;
    if (subscribe === line.subscriptions.has(uri)) return true;
    if (subscribe && (await line.capabilities()).resources?.subscribe !== true)
      throw new WayfindError(
        "failed_precondition",
        `MCP server "${owner.config.name}" offers no subscriptions to its resources`,
      );
    await line.request({
      method: subscribe ? "resources/subscribe" : "resources/unsubscribe",
      params: { uri },
      about: `the subscription to ${JSON.stringify(uri.slice(0, 200))}`,
      signal: request.signal,
      session: request.session,
    });
    if (subscribe) line.subscriptions.add(uri);
    else line.subscriptions.delete(uri);
    return true;
  }

  /** The session's log level changed: every server it has a connection to hears it. */
  async logLevelChanged(sessionId: string): Promise<void> {
    await Promise.all(this.sources.linesOf(sessionId).map((line) => line.logLevelChanged()));
  }

  /** The session's roots changed: every server it has a connection to hears it. */
  async rootsChanged(sessionId: string): Promise<void> {
    await Promise.all(this.sources.linesOf(sessionId).map((line) => line.rootsChanged()));
  }

  /** The session ended: its connections close. */
  sessionEnded(sessionId: string): Promise<void> {
    return this.sources.sessionEnded(sessionId);
  }

  /**
   * The connection to `config`'s server for the request, when the caller may see something of it and
   * the server offers `kind`; undefined otherwise (hidden, unusable for the tenant, unreachable).
   */
  private async reach(
    config: McpServerConfig | undefined,
    request: GatewayRequest,
    kind: ListKind,
  ): Promise<Reached | undefined> {
    if (config === undefined) return undefined;
    const access = this.access.forCaller(request.caller);
    if (!access.mayShowNamespace(prefixOf(config), config.tags)) return undefined;
    let line: McpCallLine;
    try {
      line = this.sources.lineFor(mcpSourceId(config.name), request.caller.tenantId, request.session.client);
      const capabilities = await line.capabilities();
      if ((kind === "prompts" ? capabilities.prompts : capabilities.resources) === undefined)
        return undefined;
    } catch (error) {
      this.leftOut(config, error);
      return undefined;
    }
    return { config, line, access };
  }

  /** The server's items the caller may see, namespaced (URIs kept); malformed ones left out. */
  private shown(reached: Reached, kind: ListKind, items: unknown): JsonObject[] {
    if (!Array.isArray(items)) return [];
    const { key } = LISTS[kind];
    const { config, access } = reached;
    const shown: JsonObject[] = [];
    for (const item of items) {
      if (!isItem(item, key)) continue;
      const name = `${prefixOf(config)}${item.name}`;
      if (access.canSee(name, config.tags)) shown.push({ ...item, name });
    }
    return shown;
  }

  /** The visible server whose prompt (or template) `name` is, with the name the server gave it. */
  private async findNamed(
    request: GatewayRequest,
    kind: "prompts",
    name: string,
  ): Promise<{ reached: Reached; upstreamName: string } | undefined> {
    for (const config of this.sources.configs) {
      const prefix = prefixOf(config);
      if (!name.startsWith(prefix) || name.length === prefix.length) continue;
      const reached = await this.reach(config, request, kind);
      if (reached === undefined || !reached.access.canSee(name, config.tags)) continue;
      const upstreamName = name.slice(prefix.length);
      if ((await this.held(reached, kind, request)).items.has(upstreamName)) return { reached, upstreamName };
    }
    return undefined;
  }

  /**
   * The visible server a URI (or URI template) belongs to: the first in the config's order that
   * listed it, or one of whose templates it fits, under a name the caller may see.
   */
  private async ownerOf(request: GatewayRequest, uri: string): Promise<Reached | undefined> {
    for (const config of this.sources.configs) {
      const reached = await this.reach(config, request, "resources");
      if (reached === undefined) continue;
      const visible = (item: JsonObject | undefined) =>
        item !== undefined && reached.access.canSee(`${prefixOf(config)}${String(item.name)}`, config.tags);
      if (visible((await this.held(reached, "resources", request)).items.get(uri))) return reached;
      for (const template of (await this.held(reached, "resourceTemplates", request)).items.values())
        if (
          visible(template) &&
          (template.uriTemplate === uri || matchesTemplate(String(template.uriTemplate), uri))
        )
          return reached;
    }
    return undefined;
  }

  /**
   * What the server holds of a list: every page read (up to MAX_PAGES_READ, MAX_ITEMS_KEPT items),
   * kept until the server announces a change (or, for a server that announces none, for a while).
   */
  private async held(reached: Reached, kind: ListKind, request: GatewayRequest): Promise<Held> {
    const { line } = reached;
    const kept = this.kept.get(line) ?? {};
    const last = kept[kind];
    const capabilities = await line.capabilities();
    const announces =
      (kind === "prompts" ? capabilities.prompts : capabilities.resources)?.listChanged === true;
    if (
      last &&
      last.version === line.listsVersion &&
      (announces || Date.now() - last.atMs < UNANNOUNCED_LIST_MS)
    )
      return last;
    const { method, field, key } = LISTS[kind];
    const version = line.listsVersion;
    const items = new Map<string, JsonObject>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES_READ && items.size < MAX_ITEMS_KEPT; page++) {
      const answer = await line
        .request({
          method,
          params: cursor === undefined ? undefined : { cursor },
          about: `${method} of MCP server "${reached.config.name}"`,
          signal: request.signal,
          session: request.session,
        })
        .catch((error: unknown) => {
          this.leftOut(reached.config, error);
          return {} as JsonObject;
        });
      const listed = answer[field];
      if (Array.isArray(listed))
        for (const item of listed) if (isItem(item, key)) items.set(String(item[key]), item);
      cursor =
        typeof answer.nextCursor === "string" && answer.nextCursor !== "" ? answer.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    const held: Held = { version, atMs: Date.now(), items };
    this.kept.set(line, { ...kept, [kind]: held });
    return held;
  }

  private leftOut(config: McpServerConfig, error: unknown): void {
    this.logger.debug(
      { source: mcpSourceId(config.name), reason: error instanceof Error ? error.message : String(error) },
      "mcp server left out of a prompts or resources answer",
    );
  }
}

/** What a server's names are prefixed with on wayfind: `<namespace>.`, or nothing. */
function prefixOf(config: McpServerConfig): string {
  return config.namespace === "" ? "" : `${config.namespace}.`;
}

/** An item of a list: an object with a string name and a string `key` (a URI, a template). */
function isItem(item: unknown, key: string): item is JsonObject & { name: string } {
  if (typeof item !== "object" || item === null || Array.isArray(item)) return false;
  const record = item as Record<string, unknown>;
  return typeof record.name === "string" && typeof record[key] === "string";
}
