import type { ToolAccess } from "../access/index.ts";
import { type ActivationStore, activateLazyGroups, type LazyGroups } from "../activation/index.ts";
import type { Caller } from "../caller/caller.ts";
import type { ToolSearchConfig } from "../config/index.ts";
import type { IndexHost, Tool } from "../discovery/index.ts";
import { discoveryToolDefinitions } from "../discovery-tools/index.ts";
import { invalidArgument } from "../errors.ts";
import type { EventSink } from "../events/index.ts";
import { type PayloadProvider, type RenderedToolPayload, renderToolPayload } from "../payload/index.ts";
import { type RenderedToolPrompt, renderToolPrompt } from "../prompt/index.ts";
import type { CallerView, CallerViews } from "./caller-views.ts";

// What a caller's tools look like to a model: the RenderToolPrompt text and the provider payloads,
// each over the caller's view.

/** What rendering reads besides the caller's view. */
export interface RenderSources {
  readonly index: IndexHost;
  readonly activations: ActivationStore;
  readonly lazyGroups: LazyGroups;
  readonly toolSearch: Omit<ToolSearchConfig, "semantic">;
  readonly events: EventSink;
}

export interface PromptOptions {
  readonly directoryMaxEntries?: number;
  readonly hintMessage?: string;
  readonly hintLimit?: number;
  readonly maxExamplesPerTool?: number;
  readonly includeExampleDescriptions?: boolean;
  readonly exampleFilterTags?: readonly string[];
  readonly includeDirectory?: boolean;
  /** Dispatch mode (or the configured default): activated tools are not shown, see renderToolPrompt. */
  readonly dispatch?: boolean;
}

/**
 * The RenderToolPrompt text of the caller's tools; a hint message first activates the lazy groups it
 * triggers, and its hints are searched over the caller's view.
 */
export async function renderPromptFor(
  sources: RenderSources,
  views: CallerViews,
  caller: Caller,
  options: PromptOptions,
): Promise<RenderedToolPrompt> {
  // Hints search the index.
  const index = await sources.index.ready();
  const access = views.accessFor(caller);
  let view = views.view(caller);
  if (
    options.hintMessage &&
    (await activateLazyGroupsFor(sources, caller, view, access, options.hintMessage))
  )
    view = views.view(caller);
  const hintView = views.toolView(caller, index, view.activeNames);
  return renderToolPrompt({
    caller,
    access,
    tenantTextAccess: views.accessWithoutNarrowing(caller),
    tools: view.ownedTools(),
    activeNames: view.activeNames,
    toolSearch: sources.toolSearch,
    dispatch: options.dispatch || sources.toolSearch.dispatch,
    examples: {
      max: options.maxExamplesPerTool,
      includeDescriptions: options.includeExampleDescriptions,
      filterTags: options.exampleFilterTags,
    },
    directory: options.includeDirectory ? { maxEntries: options.directoryMaxEntries } : undefined,
    hints: options.hintMessage
      ? {
          message: options.hintMessage,
          k: options.hintLimit,
          search: (query, limit) =>
            sources.index
              .search({ query, limit, includeAlwaysLoaded: false, view: hintView, scope: caller })
              .tools.map((hit) => hit.name),
        }
      : undefined,
    events: sources.events,
  });
}

/**
 * The caller's visible tools as a provider payload: discovery tools and always-visible tools first
 * (sorted: the cached prefix), then activated tools in activation order, so activations only append.
 * In dispatch mode the payload is the discovery tools (with tool_call) and the always-visible tools
 * only: the same bytes on every turn, whatever is activated; deferred tools are called through
 * tool_call and their definitions reach the model through tool_get.
 */
/** What RenderToolPayload asks for. */
export interface PayloadRequest {
  readonly provider: PayloadProvider;
  readonly nativeSearch: boolean;
  readonly includeDiscoveryTools: boolean;
  readonly dispatch: boolean;
}

export function renderPayloadFor(
  sources: Pick<RenderSources, "toolSearch">,
  views: CallerViews,
  caller: Caller,
  request: PayloadRequest,
): RenderedToolPayload {
  // A request's own `native_search` wins over the configured dispatch default.
  const dispatch = request.dispatch || (sources.toolSearch.dispatch && !request.nativeSearch);
  if (dispatch && request.nativeSearch)
    throw invalidArgument("dispatch and native_search exclude each other: dispatch sends no deferred tool");
  const view = views.view(caller);
  const access = views.accessFor(caller);
  const all = view.ownedTools().filter((tool) => access.canActivate(tool));
  const stable = all.filter((tool) => access.isAlwaysVisible(tool)).sort(byName);
  const byToolName = new Map(all.map((tool) => [tool.name, tool]));
  const activated = view.activeNames
    .map((name) => byToolName.get(name))
    .filter((tool): tool is Tool => tool !== undefined && !access.isAlwaysVisible(tool));
  const deferred = dispatch
    ? []
    : request.nativeSearch
      ? all.filter((tool) => !access.isAlwaysVisible(tool)).sort(byName)
      : activated;
  // Dispatch mode cannot work without tool_search, tool_get and tool_call.
  const discovery =
    request.includeDiscoveryTools || dispatch
      ? discoveryToolDefinitions({ includeSkillTools: true, includeDispatchTool: dispatch }).map((tool) => ({
          name: tool.name,
          description: tool.description,
          inputSchema: tool.argsSchema,
          deferred: false,
        }))
      : [];
  return renderToolPayload({
    provider: request.provider,
    nativeSearch: request.nativeSearch,
    tools: [
      ...discovery,
      ...stable.map((tool) => ({ ...payloadTool(tool), deferred: false })),
      ...deferred.map((tool) => ({ ...payloadTool(tool), deferred: true })),
    ],
  });
}

/** Activates the lazy groups the message triggers; true when anything new was activated. */
async function activateLazyGroupsFor(
  sources: RenderSources,
  caller: Caller,
  view: CallerView,
  access: ToolAccess,
  message: string,
): Promise<boolean> {
  if (caller.runId === "") return false;
  const notVisible = view.ownedTools().filter((tool) => !view.visibleNames.has(tool.name));
  const deps = { store: sources.activations, access, groups: sources.lazyGroups };
  const result = await activateLazyGroups(deps, caller, message, notVisible);
  return result.activated.length > 0;
}

function payloadTool(tool: Tool) {
  return { name: tool.name, description: tool.description, inputSchema: tool.argsSchema };
}

function byName(a: Tool, b: Tool): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
