import type { AccessControl, ToolAccess } from "../access/index.ts";
import {
  type ActivationScope,
  type ActivationStore,
  activateLazyGroups,
  activateVisible,
  type LazyGroups,
} from "../activation/index.ts";
import { type Caller, eventScopeOf } from "../caller/caller.ts";
import type { ToolSearchConfig } from "../config/index.ts";
import {
  type IndexHost,
  type ListResponse,
  type SearchIndex,
  type SearchRequest,
  type SearchResponse,
  type SearchType,
  type Tool,
  type ToolInput,
  type ToolRegistry,
  type ToolView,
  VERDICT,
} from "../discovery/index.ts";
import { discoveryToolDefinitions } from "../discovery-tools/index.ts";
import { failedPrecondition, invalidArgument, notFound, quoteInput } from "../errors.ts";
import type { EventSink } from "../events/index.ts";
import type { JsonObject } from "../json.ts";
import { type Choice, type Learning, type Outcome, unknownSearch } from "../learning/index.ts";
import { checkSize, LIMITS } from "../limits.ts";
import { type PayloadProvider, type RenderedToolPayload, renderToolPayload } from "../payload/index.ts";
import { type RenderedToolPrompt, renderToolPrompt } from "../prompt/index.ts";
import type { SemanticEvidence, SemanticQuery } from "../search/evidence.ts";
import type { ToolGate } from "../skills/index.ts";
import { type MatchQuality, matchQuality } from "../text/scores.ts";
import {
  argumentViolations,
  CALL_TOOL_ARGUMENTS,
  CHECK_TOOL_CALL_ARGUMENTS,
  checkArgumentsShape,
  repairMessage,
  ToolCallChecker,
} from "./call-check.ts";
import {
  type ExecutedCall,
  type ExecuteOptions,
  executeTool,
  executorFor,
  type ToolExecutor,
} from "./execute.ts";

export interface ToolSearchRequest {
  readonly query: string;
  readonly type?: SearchType;
  readonly limit?: number;
  readonly minScore?: number;
  readonly includeAlwaysLoaded: boolean;
}

export interface ToolServiceOptions {
  /** Semantic ranking (config `tool_search.semantic`), fused into FTS searches; absent = lexical only. */
  readonly semantic?: {
    evidence(query: SemanticQuery<SearchIndex>): Promise<SemanticEvidence<SearchIndex>>;
  };
  readonly registry: ToolRegistry;
  readonly index: IndexHost;
  readonly access: AccessControl;
  readonly activations: ActivationStore;
  readonly lazyGroups: LazyGroups;
  /** The semantic part is the `semantic` option's business. */
  readonly toolSearch: Omit<ToolSearchConfig, "semantic">;
  readonly events: EventSink;
  /** Learning from use: searches remembered, choices taught, each tenant's lessons applied to its searches. */
  readonly learning?: Learning;
  /** Runs the tools of MCP servers (CallTool); absent = no tool is executed here. */
  readonly executor?: ToolExecutor;
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
 * What a caller may do with tools. Every answer goes through the caller's view: the access control's
 * verdict (policy, tenant visibility, narrowing) plus the caller's activations, read on the registry
 * (`view`: get, resolve, render, payload) or as a value over a build of the index (`toolView`: search,
 * list). Handlers never reach the catalog directly, so nothing hidden can leak through search, get,
 * list, render, resolve or errors.
 */
export class ToolService {
  private readonly callChecker = new ToolCallChecker();

  constructor(private readonly options: ToolServiceOptions) {}

  /** Registers `source` of `owner` (a tenant, or "" = global; see src/caller/authorize.ts toolOwnerFor). */
  register(owner: string, source: string, tools: readonly ToolInput[], replaceSource: boolean) {
    return this.options.registry.register(source, tools, { replaceSource, owner });
  }

  /**
   * Search waits for the index to hold every change made before the call (read-your-writes). Says
   * how well the best hit matched, against `tool_search.good_match_score`.
   */
  async search(
    caller: Caller,
    request: ToolSearchRequest,
  ): Promise<SearchResponse & { readonly matchQuality: MatchQuality; readonly searchId: string }> {
    const search = this.searchOf(caller, request, this.toolView(caller, await this.options.index.ready()));
    const fts = (request.type ?? "fts") === "fts";
    // The evidence by meaning, then what the tenant learned, is worked out first and handed down:
    // the search applies both in place.
    const semantic =
      this.options.semantic && fts
        ? await this.options.semantic.evidence(this.options.index.meaningOf(search))
        : undefined;
    const learning = this.options.learning;
    const learned =
      learning && fts ? await learning.evidence(caller, request.query, semantic?.vectors ?? []) : undefined;
    const response = this.options.index.search({ ...search, semantic, learned });
    const hits = response.tools.map((hit) => hit.name);
    return {
      ...response,
      matchQuality: matchQuality(response.tools, this.options.toolSearch.goodMatchScore),
      // Only a full-text request is one to learn from (a pattern or a name says nothing of meaning).
      searchId: learning?.remember(caller, fts ? request.query : "", hits) ?? "",
    };
  }

  /**
   * An agent's verdict on a tool it chose: NOT_FOUND for a tool the caller cannot see (as for a
   * missing one); teaches the tenant's ranking when `searchId` names a search of its that showed the
   * tool. An unknown (or expired, or another tenant's) search id is NOT_FOUND too.
   */
  async reportOutcome(
    caller: Caller,
    report: { searchId: string; tool: string; outcome: Outcome; note: string; key: string },
  ): Promise<{ learned: boolean; duplicate: boolean }> {
    const tool = this.resolveOne(this.view(caller), report.tool);
    if (tool === undefined) throw toolNotFound(report.tool);
    const learning = this.options.learning;
    if (!learning) return { learned: false, duplicate: false };
    const result = await learning.report(caller, { ...report, kind: "tool", name: tool.name });
    if (!result.known) throw unknownSearch(report.searchId);
    return { learned: result.learned, duplicate: result.duplicate };
  }

  /** The caller chose `tools`: a recent search of its run that showed one teaches its tenant's ranking. */
  private chose(caller: Caller, tools: readonly string[], how: Choice): void {
    const learning = this.options.learning;
    if (!learning) return;
    for (const tool of tools) void learning.chosen(caller, tool, how);
  }

  /** `caller`'s `request` as discovery reads it, over `view`. */
  private searchOf(caller: Caller, request: ToolSearchRequest, view: ToolView): SearchRequest {
    return {
      query: request.query,
      type: request.type,
      limit: request.limit,
      minScore: request.minScore,
      includeAlwaysLoaded: request.includeAlwaysLoaded,
      view,
      scope: caller,
    };
  }

  /**
   * Full definitions by name or alias; unknown and hidden names are reported alike. Read on the
   * registry, so a get never waits for an index build.
   */
  get(caller: Caller, names: readonly string[]): GetResponse {
    if (names.length > 100) throw invalidArgument(`${names.length} names requested; ask for at most 100`);
    const view = this.view(caller);
    const tools: Tool[] = [];
    const notFound: string[] = [];
    const taken = new Set<string>();
    for (const requested of names) {
      const tool = this.resolveOne(view, requested);
      if (!tool) notFound.push(requested);
      else if (!taken.has(tool.name)) {
        taken.add(tool.name);
        tools.push(tool);
      }
    }
    this.options.events.emit({
      type: "tool_get",
      ...eventScopeOf(caller),
      attributes: { requested_count: names.length, returned_count: tools.length },
    });
    this.chose(
      caller,
      tools.map((tool) => tool.name),
      "selected",
    );
    return { tools, notFound };
  }

  async list(
    caller: Caller,
    request: { pageSize?: number; pageToken?: string; showAll: boolean },
  ): Promise<Omit<ListResponse, "tools"> & { tools: readonly (Tool & { visible: boolean })[] }> {
    const index = await this.options.index.ready();
    const view = this.view(caller);
    const response = this.options.index.list({
      pageSize: request.pageSize,
      pageToken: request.pageToken,
      view: this.toolView(caller, index, view.activeNames),
      // Every tool the caller may activate, or only those in its prompt now (always loaded, activated).
      showAll: request.showAll,
    });
    return {
      ...response,
      tools: response.tools.map((tool) => ({ ...tool, visible: view.isVisibleNow(tool) })),
    };
  }

  async activate(
    caller: Caller,
    names: readonly string[],
    scope: ActivationScope | undefined,
    reason: string,
  ) {
    // Checked up front: when every tool is already visible, the store (which checks it too) is never asked.
    checkSize(LIMITS.activateToolsReason, reason.length);
    const view = this.view(caller);
    const effectiveScope = this.scopeFor(caller, scope);
    const tools = this.resolveAll(view, names);
    const alreadyVisible = tools.filter((tool) => view.isVisibleNow(tool)).map((tool) => tool.name);
    const toActivate = tools.filter((tool) => !view.isVisibleNow(tool)).map((tool) => tool.name);
    this.chose(
      caller,
      tools.map((tool) => tool.name),
      "selected",
    );
    const result =
      toActivate.length === 0
        ? { activated: [], alreadyActive: [] }
        : await activateVisible(
            {
              store: this.options.activations,
              access: view.access,
              resolve: (name) => this.resolveOne(view, name),
            },
            caller,
            toActivate,
            { scope: effectiveScope, source: "explicit", reason },
          );
    return {
      activated: result.activated,
      alreadyVisible: [...alreadyVisible, ...result.alreadyActive],
      scope: effectiveScope,
    };
  }

  async deactivate(caller: Caller, names: readonly string[], scope: ActivationScope | undefined) {
    const canonical = names.map((name) => this.options.registry.canonicalName(name));
    return this.options.activations.deactivate(caller, canonical, this.scopeFor(caller, scope));
  }

  /**
   * A model called `name`: the tool's definition if the caller may use it, activating a deferred tool
   * on first use. A hidden tool and a missing one get the very same NOT_FOUND.
   */
  async resolve(caller: Caller, name: string, scope: ActivationScope | undefined) {
    const view = this.view(caller);
    const tool = this.resolveOne(view, name);
    if (tool === undefined) {
      this.options.activations.deny(caller, "unavailable");
      throw toolNotFound(name);
    }
    this.chose(caller, [tool.name], "selected");
    if (view.isVisibleNow(tool)) return { tool, activated: false, scope: undefined };
    const effectiveScope = this.scopeFor(caller, scope);
    const result = await this.options.activations.activate(caller, [tool.name], {
      scope: effectiveScope,
      source: "resolve",
      reason: "called by the model",
    });
    return { tool, activated: result.activated.length > 0, scope: effectiveScope };
  }

  /**
   * A call made through the dispatch tool: the tool must exist for the caller (NOT_FOUND exactly as
   * for a missing one otherwise) and the arguments match its schema. A valid call of a deferred tool
   * activates it, as `resolve` does; an invalid one activates nothing and says what to repair.
   */
  async checkCall(caller: Caller, name: string, args: unknown, scope: ActivationScope | undefined) {
    checkArgumentsShape(args, CHECK_TOOL_CALL_ARGUMENTS);
    return this.checkCallOf(caller, this.usableTool(caller, name), args, scope);
  }

  /** checkCall once the tool is known. */
  private async checkCallOf(caller: Caller, tool: Tool, args: unknown, scope: ActivationScope | undefined) {
    // A large schema is checked in the schema worker: other calls may activate the tool meanwhile.
    const problems = await this.callChecker.check(tool, args);
    // A call that fits the schema is the strongest choice; one that does not still chose the tool.
    this.chose(caller, [tool.name], problems.length === 0 ? "dispatched" : "selected");
    const view = this.view(caller);
    if (problems.length > 0 || view.isVisibleNow(tool))
      return { tool, problems, activated: false, scope: undefined };
    const effectiveScope = this.scopeFor(caller, scope);
    const result = await this.options.activations.activate(caller, [tool.name], {
      scope: effectiveScope,
      source: "resolve",
      reason: "called through the dispatch tool",
    });
    return { tool, problems, activated: result.activated.length > 0, scope: effectiveScope };
  }

  /**
   * CallTool: a call checked as `checkCall` checks it (INVALID_ARGUMENT saying what to repair when
   * the arguments do not fit), then executed by the tool's source (src/tools/execute.ts).
   */
  async call(
    caller: Caller,
    name: string,
    args: JsonObject,
    scope: ActivationScope | undefined,
    options: ExecuteOptions,
  ): Promise<ExecutedCall> {
    checkArgumentsShape(args, CALL_TOOL_ARGUMENTS);
    const tool = this.usableTool(caller, name);
    // Before the check, which may activate the tool: a tool nobody here executes changes nothing.
    const executor = executorFor(this.options.executor, tool);
    const { problems } = await this.checkCallOf(caller, tool, args, scope);
    if (problems.length > 0)
      throw invalidArgument(repairMessage(tool.name, problems), argumentViolations(problems));
    return executeTool(executor, this.options.events, caller, tool, args, options);
  }

  /** The tool `name` is for the caller; NOT_FOUND (and a denial) exactly as for a missing one otherwise. */
  private usableTool(caller: Caller, name: string): Tool {
    const tool = this.resolveOne(this.view(caller), name);
    if (tool !== undefined) return tool;
    this.options.activations.deny(caller, "unavailable");
    throw toolNotFound(name);
  }

  async renderPrompt(caller: Caller, options: PromptOptions): Promise<RenderedToolPrompt> {
    // Hints search the index.
    const index = await this.options.index.ready();
    const access = this.accessFor(caller, true);
    let view = this.view(caller);
    if (options.hintMessage && (await this.activateLazyGroups(caller, view, access, options.hintMessage)))
      view = this.view(caller);
    const hintView = this.toolView(caller, index, view.activeNames);
    return renderToolPrompt({
      caller,
      access,
      tenantTextAccess: this.accessWithoutNarrowing(caller),
      tools: view.ownedTools(),
      activeNames: view.activeNames,
      toolSearch: this.options.toolSearch,
      dispatch: options.dispatch || this.options.toolSearch.dispatch,
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
              this.options.index
                .search(this.searchOf(caller, { query, limit, includeAlwaysLoaded: false }, hintView))
                .tools.map((hit) => hit.name),
          }
        : undefined,
      events: this.options.events,
    });
  }

  /**
   * The caller's visible tools as a provider payload: discovery tools and always-visible tools first
   * (sorted: the cached prefix), then activated tools in activation order, so activations only append.
   * In dispatch mode the payload is the discovery tools (with tool_call) and the always-visible tools
   * only: the same bytes on every turn, whatever is activated; deferred tools are called through
   * tool_call and their definitions reach the model through tool_get.
   */
  renderPayload(
    caller: Caller,
    request: {
      provider: PayloadProvider;
      nativeSearch: boolean;
      includeDiscoveryTools: boolean;
      dispatch: boolean;
    },
  ): RenderedToolPayload {
    // A request's own `native_search` wins over the configured dispatch default.
    const dispatch = request.dispatch || (this.options.toolSearch.dispatch && !request.nativeSearch);
    if (dispatch && request.nativeSearch)
      throw invalidArgument("dispatch and native_search exclude each other: dispatch sends no deferred tool");
    const view = this.view(caller);
    const access = this.accessFor(caller, true);
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
        ? discoveryToolDefinitions({ includeSkillTools: true, includeDispatchTool: dispatch }).map(
            (tool) => ({
              name: tool.name,
              description: tool.description,
              inputSchema: tool.argsSchema,
              deferred: false,
            }),
          )
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

  /** The tools this caller may see or activate (policy, visibility, narrowing, ownership). */
  visibilityFor(caller: Caller): (tool: Tool) => boolean {
    return this.accessFor(caller, true).canActivate;
  }

  /**
   * Which tool names skill text may show this caller. Text the operator wrote keeps the names the
   * caller may see and rewrites every other tool-like name, existing or not. Text a tenant may have
   * written hides only names its narrowing removed (names it could see without narrowing): any other
   * name stays as written. Either way the output is the same whether a hidden name exists or not.
   */
  toolGate(caller: Caller): ToolGate {
    const access = this.accessFor(caller, true);
    const withoutNarrowing = this.accessWithoutNarrowing(caller);
    let visible: Set<string> | undefined;
    const visibleNames = (): Set<string> => {
      if (visible === undefined) {
        visible = new Set();
        for (const tool of this.options.registry.all()) if (access.canActivate(tool)) visible.add(tool.name);
      }
      return visible;
    };
    return {
      isVisible: (name) => visibleNames().has(name),
      narrowedAway: () => {
        const seen = visibleNames();
        const away = new Set<string>();
        for (const tool of this.options.registry.all())
          if (!seen.has(tool.name) && withoutNarrowing.canActivate(tool)) away.add(tool.name);
        return [...away];
      },
    };
  }

  /** Activates the lazy groups the message triggers; true when anything new was activated. */
  private async activateLazyGroups(
    caller: Caller,
    view: CallerView,
    access: ToolAccess,
    message: string,
  ): Promise<boolean> {
    if (caller.runId === "") return false;
    const notVisible = view.ownedTools().filter((tool) => !view.visibleNames.has(tool.name));
    const deps = { store: this.options.activations, access, groups: this.options.lazyGroups };
    const result = await activateLazyGroups(deps, caller, message, notVisible);
    return result.activated.length > 0;
  }

  /** The caller's access as it would be without its narrowing: what its tenant's own text may name. */
  private accessWithoutNarrowing(caller: Caller): ToolAccess {
    return this.accessFor(caller.narrowToTools.length > 0 ? { ...caller, narrowToTools: [] } : caller, true);
  }

  /**
   * The access control's verdict (policy, tenant visibility, narrowing) restricted to the tools that
   * exist for the caller's tenant (ToolRegistry.existsFor): everything downstream (render, payload,
   * lazy groups, activation checks) sees other tenants' tools as missing, as search and list do
   * (src/discovery/views.ts). A read of the `wholeCatalog` takes the caller's verdicts over the
   * registry's tools, which src/access works out once per caller and registry version.
   */
  private accessFor(caller: Caller, wholeCatalog = false): ToolAccess {
    const base = this.options.access.forCaller(caller);
    const exists = (tool: Tool) => this.options.registry.existsFor(caller.tenantId, tool);
    if (!wholeCatalog)
      return {
        canActivate: (tool) => exists(tool) && base.canActivate(tool),
        isAlwaysVisible: (tool) => exists(tool) && base.isAlwaysVisible(tool),
      };
    const { tools, placeOf } = this.options.registry.snapshot();
    const verdicts = base.verdicts(tools);
    // A tool of another registry version (a change since) is judged on its own.
    const holds = (tool: Tool, bit: number, judge: (tool: Tool) => boolean) => {
      const place = placeOf.get(tool);
      return exists(tool) && (place === undefined ? judge(tool) : ((verdicts[place] ?? 0) & bit) !== 0);
    };
    return {
      canActivate: (tool) => holds(tool, VERDICT.canActivate, (t) => base.canActivate(t)),
      isAlwaysVisible: (tool) => holds(tool, VERDICT.alwaysVisible, (t) => base.isAlwaysVisible(t)),
    };
  }

  private scopeFor(caller: Caller, requested: ActivationScope | undefined): ActivationScope {
    const scope = requested ?? this.options.toolSearch.activationScope;
    if (scope === "session" && caller.sessionId === "") {
      throw failedPrecondition(
        "session-scoped activation needs caller.session_id (or use ACTIVATION_SCOPE_RUN)",
      );
    }
    if (scope === "run" && caller.runId === "") {
      throw failedPrecondition("run-scoped activation needs caller.run_id (or use ACTIVATION_SCOPE_SESSION)");
    }
    return scope;
  }

  /** The tool `name` means for the caller: the first its lookup tries that the caller may use. */
  private resolveOne(view: CallerView, name: string): Tool | undefined {
    return this.options.registry.lookup(name, view.tenant).find(view.canActivate);
  }

  private resolveAll(view: CallerView, names: readonly string[]): Tool[] {
    const tools: Tool[] = [];
    const missing: string[] = [];
    for (const name of names) {
      const tool = this.resolveOne(view, name);
      if (tool) tools.push(tool);
      else missing.push(name);
    }
    if (missing.length > 0) throw toolNotFound(missing.join(", "));
    return tools;
  }

  /** What `caller` sees now: its access and activations, over the registry's tools. */
  private view(caller: Caller): CallerView {
    const access = this.accessFor(caller);
    const enabled = this.options.toolSearch.enabled;
    const activeNames = this.options.activations.activeFor(caller);
    const visibleNames = new Set(activeNames);
    const tenant = caller.tenantId;
    return {
      tenant,
      access,
      canActivate: (tool) => access.canActivate(tool),
      ownedTools: () =>
        [...this.options.registry.all()].filter((tool) => this.options.registry.existsFor(tenant, tool)),
      activeNames,
      visibleNames,
      isVisibleNow: (tool) => !enabled || access.isAlwaysVisible(tool) || visibleNames.has(tool.name),
    };
  }

  /**
   * What `caller` sees of `index` (a build `ready()` gave), as the value search and list mask the
   * build with: no predicate crosses into discovery.
   */
  private toolView(
    caller: Caller,
    index: SearchIndex,
    activeNames: readonly string[] = this.options.activations.activeFor(caller),
  ): ToolView {
    return {
      index,
      tenant: caller.tenantId,
      access: this.options.access.forCaller(caller).verdicts(index.docs),
      activeNames,
      allShown: !this.options.toolSearch.enabled,
    };
  }
}

interface CallerView {
  readonly tenant: string;
  readonly access: ToolAccess;
  /** The tools that exist for this caller: its tenant's own and the global ones it did not shadow. */
  readonly ownedTools: () => Tool[];
  readonly canActivate: (tool: Tool) => boolean;
  /** Activated names in activation order (always-visible tools are decided by `access`). */
  readonly activeNames: readonly string[];
  /** The same names, for lookups. */
  readonly visibleNames: ReadonlySet<string>;
  readonly isVisibleNow: (tool: Tool) => boolean;
}

interface GetResponse {
  readonly tools: readonly Tool[];
  /** Requested names that are unknown or not visible (indistinguishable on purpose). */
  readonly notFound: readonly string[];
}

/** The same message whether the tool is hidden or missing: existence never leaks. */
function toolNotFound(name: string) {
  return notFound(`tool ${quoteInput(name)} not found; use tool_search to find tools`);
}

function payloadTool(tool: Tool) {
  return { name: tool.name, description: tool.description, inputSchema: tool.argsSchema };
}

function byName(a: Tool, b: Tool): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
