import type { AccessControl, ToolAccess } from "../access/index.ts";
import type { ActivationStore } from "../activation/index.ts";
import type { Caller } from "../caller/caller.ts";
import type { ToolSearchConfig } from "../config/index.ts";
import {
  type SearchIndex,
  type Tool,
  type ToolRegistry,
  type ToolView,
  VERDICT,
} from "../discovery/index.ts";
import { notFound, quoteInput } from "../errors.ts";
import type { ToolGate } from "../skills/index.ts";

/** What a caller's view is made of: the catalog, the access control and the caller's activations. */
export interface ViewSources {
  readonly registry: ToolRegistry;
  readonly access: AccessControl;
  readonly activations: ActivationStore;
  readonly toolSearch: Pick<ToolSearchConfig, "enabled">;
}

/**
 * What a caller sees of the tools: the access control's verdict (policy, tenant visibility,
 * narrowing) restricted to the tools that exist for its tenant, plus its activations — read on the
 * registry (`view`) or as a value over a build of the index (`toolView`). Every answer of the tool
 * service goes through one of them, so nothing hidden leaks through any of its answers or errors.
 */
export class CallerViews {
  constructor(private readonly sources: ViewSources) {}

  /**
   * Which tool names skill text may show this caller. Text the operator wrote keeps the names the
   * caller may see and rewrites every other tool-like name, existing or not; a name under a namespace
   * of the tenant's catalog reads as a tool whatever its words (other tenants' tools never count, so
   * they cannot change what this tenant reads). Text a tenant may have
   * written hides only names its narrowing removed (names it could see without narrowing): any other
   * name stays as written. Either way the output is the same whether a hidden name exists or not.
   */
  toolGate(caller: Caller): ToolGate {
    const access = this.accessFor(caller);
    const withoutNarrowing = this.accessWithoutNarrowing(caller);
    let visible: Set<string> | undefined;
    const visibleNames = (): Set<string> => {
      if (visible === undefined) {
        visible = new Set();
        for (const tool of this.sources.registry.all()) if (access.canActivate(tool)) visible.add(tool.name);
      }
      return visible;
    };
    let namespaces: Set<string> | undefined;
    const knownNamespaces = (): Set<string> => {
      if (namespaces === undefined) {
        namespaces = new Set();
        for (const tool of this.sources.registry.all()) {
          if (!this.sources.registry.existsFor(caller.tenantId, tool)) continue;
          for (const name of [tool.namespace, tool.source, tool.name.split(".")[0] ?? ""])
            if (name !== "" && name !== tool.name) namespaces.add(name);
        }
      }
      return namespaces;
    };
    return {
      isVisible: (name) => visibleNames().has(name),
      isKnownNamespace: (namespace) => knownNamespaces().has(namespace),
      narrowedAway: () => {
        const seen = visibleNames();
        const away = new Set<string>();
        for (const tool of this.sources.registry.all())
          if (!seen.has(tool.name) && withoutNarrowing.canActivate(tool)) away.add(tool.name);
        return [...away];
      },
    };
  }

  /** The caller's access as it would be without its narrowing: what its tenant's own text may name. */
  accessWithoutNarrowing(caller: Caller): ToolAccess {
    return this.accessFor(caller.narrowToTools.length > 0 ? { ...caller, narrowToTools: [] } : caller);
  }

  /**
   * The access control's verdicts (policy, tenant visibility, narrowing) restricted to the tools that
   * exist for the caller's tenant (toolExistsFor): everything downstream (get, resolve, render,
   * payload, lazy groups, activation checks) sees other tenants' tools as missing, as search and list
   * do (src/discovery/views.ts). Read in one form on every path: the caller's verdict array over a
   * list of tools (here the registry's, there a build's docs), which src/access works out once per
   * caller and list.
   */
  accessFor(caller: Caller): ToolAccess {
    const base = this.sources.access.forCaller(caller);
    const exists = (tool: Tool) => this.sources.registry.existsFor(caller.tenantId, tool);
    const { tools, placeOf } = this.sources.registry.snapshot();
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

  /** The tool `name` means for the caller: the first its lookup tries that the caller may use. */
  resolveOne(view: CallerView, name: string): Tool | undefined {
    return this.sources.registry.lookup(name, view.tenant).find(view.canActivate);
  }

  resolveAll(view: CallerView, names: readonly string[]): Tool[] {
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
  view(caller: Caller): CallerView {
    const access = this.accessFor(caller);
    const enabled = this.sources.toolSearch.enabled;
    const activeNames = this.sources.activations.activeFor(caller);
    const visibleNames = new Set(activeNames);
    const tenant = caller.tenantId;
    return {
      tenant,
      access,
      canActivate: (tool) => access.canActivate(tool),
      ownedTools: () =>
        [...this.sources.registry.all()].filter((tool) => this.sources.registry.existsFor(tenant, tool)),
      activeNames,
      visibleNames,
      isVisibleNow: (tool) => !enabled || access.isAlwaysVisible(tool) || visibleNames.has(tool.name),
    };
  }

  /**
   * What `caller` sees of `index` (a build `ready()` gave), as the value search and list mask the
   * build with: no predicate crosses into discovery.
   */
  toolView(
    caller: Caller,
    index: SearchIndex,
    activeNames: readonly string[] = this.sources.activations.activeFor(caller),
  ): ToolView {
    return {
      index,
      tenant: caller.tenantId,
      access: this.sources.access.forCaller(caller).verdicts(index.docs),
      activeNames,
      allShown: !this.sources.toolSearch.enabled,
    };
  }
}

export interface CallerView {
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

/** The same message whether the tool is hidden or missing: existence never leaks. */
export function toolNotFound(name: string) {
  return notFound(`tool ${quoteInput(name)} not found; use tool_search to find tools`);
}
