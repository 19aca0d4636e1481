/** Caller views as masks over a build of the index: what a search or a list of the caller may take. */

import { LruCache } from "../lru.ts";
import { Candidates } from "../search/ranker-options.ts";
import { type SearchIndex, type ToolView, toolExistsFor, VERDICT, type VisibleSet } from "./types.ts";

/**
 * Which of a view's tools a read takes: those it may find by search (not in its prompt yet), every
 * one it may activate, or only those in its prompt now (always visible or activated).
 */
type ViewScope = "findable" | "activatable" | "shown";

/** Visible sets kept per build of the index; a fleet has a few visibility shapes, not thousands. */
const VISIBLE_SETS_MAX = 256;

/** The visible sets of the views that read one build, least recently used dropped first. */
interface BuildSets {
  readonly sets: LruCache<string, VisibleSet>;
  /** A number per verdict array (src/access hands one per kind of caller and build), for the sets' keys. */
  readonly verdictIds: WeakMap<Uint8Array, number>;
  nextVerdictId: number;
}

/** By build: the sets die with it. */
const setsByBuild = new WeakMap<SearchIndex, BuildSets>();

/**
 * The tools of `view`'s build in `scope`. A mask is a pure function of the view, so it is made once
 * and kept with the build (a caller's searches would each pay a pass over every tool), by the view's
 * verdict array and the rest of its fields.
 */
export function visibleSet(view: ToolView, scope: ViewScope): VisibleSet {
  let build = setsByBuild.get(view.index);
  if (build === undefined) {
    build = { sets: new LruCache(VISIBLE_SETS_MAX), verdictIds: new WeakMap(), nextVerdictId: 0 };
    setsByBuild.set(view.index, build);
  }
  let verdictId = build.verdictIds.get(view.access);
  if (verdictId === undefined) {
    verdictId = build.nextVerdictId++;
    build.verdictIds.set(view.access, verdictId);
  }
  const key = JSON.stringify([verdictId, view.tenant, [...view.activeNames].sort(), view.allShown, scope]);
  const known = build.sets.get(key);
  if (known !== undefined) return known;
  const set = maskOf(view, scope);
  build.sets.set(key, set);
  return set;
}

function maskOf(view: ToolView, scope: ViewScope): VisibleSet {
  const { index, access, tenant } = view;
  const active = new Set(view.activeNames);
  const allowed = new Uint8Array(index.docs.length);
  let totalDeferred = 0;
  index.docs.forEach((t, d) => {
    const verdict = access[d] ?? 0;
    if ((verdict & VERDICT.canActivate) === 0 || !existsFor(index, d, tenant)) return;
    const shown = view.allShown || (verdict & VERDICT.alwaysVisible) !== 0 || active.has(t.name);
    if (scope === "findable" ? shown : scope === "shown" && !shown) return;
    allowed[d] = 1;
    if (t.loadingMode === "deferred") totalDeferred++;
  });
  return { index, candidates: new Candidates(allowed), totalDeferred };
}

/** Whether doc `d` exists for `tenant` (toolExistsFor). */
function existsFor(index: SearchIndex, d: number, tenant: string): boolean {
  const { owner, name } = index.docs[d] ?? { owner: "", name: "" };
  return toolExistsFor(owner, tenant, () => {
    // Docs of one name are adjacent, ordered by owner: the global one first.
    for (let e = d + 1; e < index.docs.length && index.docs[e]?.name === name; e++)
      if (index.docs[e]?.owner === tenant) return true;
    return false;
  });
}
