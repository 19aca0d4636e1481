import type { AccessControl } from "../access/index.ts";
import {
  type ActivationScope,
  type ActivationStore,
  activateVisible,
  type LazyGroups,
} from "../activation/index.ts";
import { type Caller, eventScopeOf } from "../caller/caller.ts";
import type { ToolSearchConfig } from "../config/index.ts";
import type {
  IndexHost,
  ListResponse,
  SearchIndex,
  SearchRequest,
  SearchResponse,
  Tool,
  ToolInput,
  ToolRegistry,
  ToolView,
} from "../discovery/index.ts";
import { failedPrecondition, invalidArgument } from "../errors.ts";
import type { EventSink } from "../events/index.ts";
import type { JsonObject } from "../json.ts";
import { type Choice, type Learning, type Outcome, unknownSearch } from "../learning/index.ts";
import { checkSize, LIMITS } from "../limits.ts";
import type { RenderedToolPayload } from "../payload/index.ts";
import type { RenderedToolPrompt } from "../prompt/index.ts";
import type { SearchType } from "../search/answer.ts";
import type { SemanticEvidence, SemanticQuery } from "../search/evidence.ts";
import type { ToolGate } from "../skills/index.ts";
import {
  argumentViolations,
  CALL_TOOL_ARGUMENTS,
  CHECK_TOOL_CALL_ARGUMENTS,
  checkArgumentsShape,
  repairMessage,
  ToolCallChecker,
} from "./call-check.ts";
import { CallerViews, toolNotFound } from "./caller-views.ts";
import {
  type ExecutedCall,
  type ExecuteOptions,
  executeTool,
  executorFor,
  type ToolExecutor,
} from "./execute.ts";
import { type PayloadRequest, type PromptOptions, renderPayloadFor, renderPromptFor } from "./render.ts";

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

/**
 * What a caller may do with tools: search, get, list, activate, resolve, check and make calls, and
 * render them for a model (render.ts). Every answer goes through the caller's view (caller-views.ts):
 * the access control's verdict (policy, tenant visibility, narrowing) plus the caller's activations,
 * read on the registry (`view`: get, resolve, render, payload) or as a value over a build of the index
 * (`toolView`: search, list). Handlers never reach the catalog directly, so nothing hidden can leak
 * through search, get, list, render, resolve or errors.
 */
export class ToolService {
  private readonly callChecker = new ToolCallChecker();
  private readonly views: CallerViews;

  constructor(private readonly options: ToolServiceOptions) {
    this.views = new CallerViews(options);
  }

  /** Registers `source` of `owner` (a tenant, or "" = global; see src/caller/authorize.ts toolOwnerFor). */
  register(owner: string, source: string, tools: readonly ToolInput[], replaceSource: boolean) {
    return this.options.registry.register(source, tools, { replaceSource, owner });
  }

  /**
   * Search waits for the index to hold every change made before the call (read-your-writes).
   */
  async search(
    caller: Caller,
    request: ToolSearchRequest,
  ): Promise<SearchResponse & { readonly searchId: string }> {
    const { index } = this.options;
    const search = index.prepare(
      this.searchOf(caller, request, this.views.toolView(caller, await index.ready())),
    );
    const fts = (request.type ?? "fts") === "fts";
    // The evidence by meaning, then what the tenant learned, is worked out first and handed down:
    // the search applies both in place.
    const semantic =
      this.options.semantic && fts
        ? await this.options.semantic.evidence(index.meaningOf(search))
        : undefined;
    const learning = this.options.learning;
    const learned =
      learning && fts ? await learning.evidence(caller, request.query, semantic?.vectors ?? []) : undefined;
    const response = index.searchPrepared(search, { semantic, learned });
    const hits = response.tools.map((hit) => hit.name);
    return {
      ...response,
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
    const tool = this.views.resolveOne(this.views.view(caller), report.tool);
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
    const view = this.views.view(caller);
    const tools: Tool[] = [];
    const notFound: string[] = [];
    const taken = new Set<string>();
    for (const requested of names) {
      const tool = this.views.resolveOne(view, requested);
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
    const view = this.views.view(caller);
    const response = this.options.index.list({
      pageSize: request.pageSize,
      pageToken: request.pageToken,
      view: this.views.toolView(caller, index, view.activeNames),
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
    const view = this.views.view(caller);
    const effectiveScope = this.scopeFor(caller, scope);
    const tools = this.views.resolveAll(view, names);
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
              resolve: (name) => this.views.resolveOne(view, name),
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
    const view = this.views.view(caller);
    const tool = this.views.resolveOne(view, name);
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
    const view = this.views.view(caller);
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
    const tool = this.views.resolveOne(this.views.view(caller), name);
    if (tool !== undefined) return tool;
    this.options.activations.deny(caller, "unavailable");
    throw toolNotFound(name);
  }

  /** The RenderToolPrompt text of the caller's tools (render.ts). */
  renderPrompt(caller: Caller, options: PromptOptions): Promise<RenderedToolPrompt> {
    return renderPromptFor(this.options, this.views, caller, options);
  }

  /**
   * The caller's visible tools as a provider payload (render.ts): discovery tools and always-visible
   * tools first (sorted: the cached prefix), then activated tools in activation order.
   */
  renderPayload(caller: Caller, request: PayloadRequest): RenderedToolPayload {
    return renderPayloadFor(this.options, this.views, caller, request);
  }

  /** The tools this caller may see or activate (policy, visibility, narrowing, ownership). */
  visibilityFor(caller: Caller): (tool: Tool) => boolean {
    return this.views.accessFor(caller).canActivate;
  }

  /** Which tool names skill text may show this caller (caller-views.ts). */
  toolGate(caller: Caller): ToolGate {
    return this.views.toolGate(caller);
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
}

interface GetResponse {
  readonly tools: readonly Tool[];
  /** Requested names that are unknown or not visible (indistinguishable on purpose). */
  readonly notFound: readonly string[];
}
