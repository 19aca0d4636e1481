import { createHash } from "node:crypto";
import type { ToolAccess } from "../access/index.ts";
import type { Caller } from "../caller/caller.ts";
import type { ToolSearchConfig } from "../config/types.ts";
import type { Tool } from "../discovery/types.ts";
import type { EventSink } from "../events/index.ts";
import { LIMITS } from "../limits.ts";
import { estimateTokens } from "../text/tokens.ts";
import { oneLine, type RenderExamplesOptions, renderExamples } from "./examples.ts";
import { schemaSignature } from "./signature.ts";

/** Finds deferred tools for a message; returns tool names, best first (e.g. the catalog's search). */
type HintSearch = (query: string, limit: number) => readonly string[];

export interface RenderToolPromptRequest {
  readonly caller: Caller;
  readonly access: ToolAccess;
  /**
   * What text a tenant may have written (its own tools' descriptions, examples, tags) hides: names
   * this access admits but `access` does not (the caller's access without its narrowing). Any other
   * name stays as written, so that text never reveals whether a tool hidden from the caller exists.
   * Default: `access` (nothing extra hidden in tenant text).
   */
  readonly tenantTextAccess?: ToolAccess;
  /** Every tool of the catalog (any order); access decides what is shown, counted or hinted. */
  readonly tools: Iterable<Tool>;
  /** The caller's activations in activation order (`ActivationStore.activeFor`). */
  readonly activeNames: readonly string[];
  readonly toolSearch: Pick<ToolSearchConfig, "enabled">;
  /**
   * Dispatch mode: only always-visible tools are shown, never activated ones, and the guidance says to
   * call found tools through tool_call; the prompt then stays byte-identical as tools activate.
   */
  readonly dispatch?: boolean;
  readonly examples?: RenderExamplesOptions;
  /** Adds `<tool_directory>`: namespaces and tags of the deferred tools with counts. */
  readonly directory?: { readonly maxEntries?: number };
  /** Adds `<tool_hints>`: up to `k` (default 3) deferred tools relevant to `message`. */
  readonly hints?: { readonly message: string; readonly k?: number; readonly search: HintSearch };
  readonly events?: EventSink;
}

export interface RenderedToolPrompt {
  readonly text: string;
  readonly tokenEstimate: number;
  /** sha256 hex of `text`. */
  readonly fingerprint: string;
  /** Shown tools in render order. */
  readonly visibleTools: readonly string[];
  /** Visible tools that are deferred (searchable), whether or not currently activated. */
  readonly deferredCount: number;
  readonly hintedTools: readonly string[];
  /**
   * `text.slice(0, stablePrefixLength)` — everything but the hints — is a byte-identical prefix of
   * the next render after more activations (same catalog, access and options).
   */
  readonly stablePrefixLength: number;
}

const DEFAULT_DIRECTORY_ENTRIES = LIMITS.directoryMaxEntries.default;
const DEFAULT_HINTS = LIMITS.hintLimit.default;
/** Hints come from one tool search. */
const MAX_HINTS = LIMITS.searchToolsLimit.max;
const REDACTED = "[unavailable tool]";

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const escapeText = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeAttr = (text: string): string => escapeText(text).replace(/"/g, "&quot;");

/**
 * The prompt blocks for one caller (docs/design.md §3 RenderToolPrompt). Layout, in this order:
 *
 *   <tool_discovery>  guidance for tool_search / tool_get with the deferred count   (stable)
 *   <tool_directory>  optional: namespaces/tags of deferred tools with counts        (stable)
 *   <tool …>          always-visible tools sorted by name, then activated tools in
 *                     activation order, each its own element                        (append-only)
 *   <tool_hints>      optional, per message                                         (variable)
 *
 * Everything before the hints depends only on the catalog, access and options — the deferred count
 * includes activated deferred tools — so an activation only appends one `<tool>` element there. In
 * dispatch mode activated tools are not shown at all (the model reads their definitions in the
 * conversation and calls them through tool_call), so an activation changes nothing before the hints.
 * With `toolSearch.enabled = false` every visible tool is shown and the output equals
 * `renderToolCatalog` of those tools. Names and aliases of tools the caller cannot see are redacted
 * from descriptions, examples and the directory (whole name-shaped tokens, case-insensitive); argument
 * signatures are structural and left as they are.
 */
export function renderToolPrompt(request: RenderToolPromptRequest): RenderedToolPrompt {
  const { access } = request;
  const all = [...request.tools];
  const byName = new Map(all.map((tool) => [tool.name, tool]));
  const visible = all.filter((tool) => access.canActivate(tool));
  const hidden = all.filter((tool) => !access.canActivate(tool));
  const tenantTextAccess = request.tenantTextAccess ?? access;
  const operatorRedact = redactor(hidden, visible);
  const tenantRedact = redactor(
    hidden.filter((tool) => tenantTextAccess.canActivate(tool)),
    visible,
  );
  // Global tools carry the operator's text; a tenant's own tools carry text it may have written.
  const redactFor = (tool: Tool) => (tool.owner === "" ? operatorRedact : tenantRedact);

  if (!request.toolSearch.enabled) {
    const text = renderCatalogText(visible, request.examples, redactFor);
    return finish(text, sortByName(visible), 0, [], text.length);
  }

  const always = sortByName(visible.filter((tool) => access.isAlwaysVisible(tool)));
  const shownNames = new Set(always.map((t) => t.name));
  const shown = [...always];
  for (const name of request.dispatch ? [] : request.activeNames) {
    const tool = byName.get(name);
    if (tool === undefined || shownNames.has(name) || !access.canActivate(tool)) continue;
    shownNames.add(name);
    shown.push(tool);
  }
  const deferred = visible.filter((tool) => !access.isAlwaysVisible(tool));

  const dispatch = request.dispatch ?? false;
  const parts = [discoveryBlock(deferred.length, dispatch)];
  if (request.directory !== undefined) {
    const { text, entries } = directoryBlock(
      deferred,
      request.directory.maxEntries ?? DEFAULT_DIRECTORY_ENTRIES,
    );
    // Namespaces and tags of several tools: tenant text as soon as one of them is the tenant's.
    parts.push(deferred.some((tool) => tool.owner !== "") ? tenantRedact(text) : operatorRedact(text));
    request.events?.emit({
      type: "tool_directory_rendered",
      ...scope(request.caller),
      attributes: { entries, deferred_count: deferred.length },
    });
  }
  for (const tool of shown) parts.push(toolElement(tool, request.examples, redactFor(tool)));
  const stableText = parts.join("");

  let hinted: string[] = [];
  if (request.hints !== undefined) {
    const k = Math.min(MAX_HINTS, Math.max(0, request.hints.k ?? DEFAULT_HINTS));
    const pool = new Map(deferred.filter((t) => !shownNames.has(t.name)).map((t) => [t.name, t]));
    if (k > 0 && pool.size > 0 && request.hints.message.trim() !== "") {
      // Over-fetch: the callback may return shown or invisible names, which are dropped here.
      const found = request.hints.search(request.hints.message, Math.min(MAX_HINTS, k + shownNames.size));
      hinted = [...new Set(found)].filter((name) => pool.has(name)).slice(0, k);
    }
    request.events?.emit({
      type: "tool_hints_generated",
      ...scope(request.caller),
      attributes: { count: hinted.length },
    });
  }
  const text = hinted.length > 0 ? stableText + hintsBlock(hinted, dispatch) : stableText;
  return finish(
    text,
    shown.map((t) => t.name),
    deferred.length,
    hinted,
    stableText.length,
  );
}

/** A plain render of `tools` (sorted by name), no discovery guidance: what tool_search off means. */
export function renderToolCatalog(tools: Iterable<Tool>, examples?: RenderExamplesOptions): string {
  return renderCatalogText([...tools], examples, () => (text) => text);
}

function renderCatalogText(
  tools: readonly Tool[],
  examples: RenderExamplesOptions | undefined,
  redactFor: (tool: Tool) => (text: string) => string,
): string {
  return sortByName(tools)
    .map((tool) => toolElement(tool, examples, redactFor(tool)))
    .join("");
}

function finish(
  text: string,
  visible: readonly Tool[] | readonly string[],
  deferredCount: number,
  hintedTools: readonly string[],
  stablePrefixLength: number,
): RenderedToolPrompt {
  return {
    text,
    tokenEstimate: estimateTokens(text),
    fingerprint: createHash("sha256").update(text).digest("hex"),
    visibleTools: visible.map((t) => (typeof t === "string" ? t : t.name)),
    deferredCount,
    hintedTools,
    stablePrefixLength,
  };
}

function toolElement(
  tool: Tool,
  examples: RenderExamplesOptions | undefined,
  redact: (t: string) => string,
): string {
  const lines = [`<tool name="${escapeAttr(tool.name)}" side_effects="${tool.sideEffects}">`];
  const description = oneLine(tool.description);
  if (description !== "") lines.push(escapeText(redact(description)));
  lines.push(`args: ${escapeText(schemaSignature(tool.argsSchema))}`);
  const exampleLines = renderExamples(tool.examples, examples);
  if (exampleLines.length > 0) {
    lines.push("examples:");
    for (const line of exampleLines) lines.push(escapeText(redact(line)));
  }
  lines.push("</tool>");
  return `${lines.join("\n")}\n`;
}

function discoveryBlock(deferredCount: number, dispatch: boolean): string {
  const guidance = dispatch
    ? [
        `${deferredCount} deferred tools can be loaded on demand; below are only the tools you can call directly.`,
        "To find one: call tool_search with a short description of the task (or a tool name), then call",
        "tool_get with the exact names you picked to read their definitions. Call a loaded tool through",
        "tool_call with its exact name and arguments matching its schema; if they do not fit, fix what the",
        "error says and call again. Never guess a tool name.",
      ]
    : [
        `${deferredCount} deferred tools can be loaded on demand; below are only the tools loaded so far.`,
        "To find one: call tool_search with a short description of the task (or a tool name), then call",
        "tool_get with the exact names you picked to load their definitions; loaded tools are added below.",
        "Only call tools listed below or returned by tool_get; never guess a tool name.",
      ];
  return ["<tool_discovery>", ...guidance, "</tool_discovery>", ""].join("\n");
}

function directoryBlock(deferred: readonly Tool[], maxEntries: number): { text: string; entries: number } {
  const limit = Math.max(0, maxEntries);
  const namespaces = topCounts(deferred.map((t) => [t.namespace || "(none)"]));
  const tags = topCounts(deferred.map((t) => t.tags));
  const nsShown = namespaces.slice(0, limit);
  const tagShown = tags.slice(0, limit - nsShown.length);
  const line = (label: string, shown: [string, number][], total: number): string => {
    const items = shown.map(([key, n]) => `${escapeText(key)} (${n})`);
    if (total > shown.length) items.push(`… ${total - shown.length} more`);
    return `${label}: ${items.join(", ")}`;
  };
  const lines = ["<tool_directory>"];
  if (namespaces.length > 0) lines.push(line("namespaces", nsShown, namespaces.length));
  if (tags.length > 0) lines.push(line("tags", tagShown, tags.length));
  lines.push("</tool_directory>", "");
  return { text: lines.join("\n"), entries: nsShown.length + tagShown.length };
}

function topCounts(groups: readonly (readonly string[])[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const keys of groups) for (const key of new Set(keys)) counts.set(key, (counts.get(key) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || compare(a[0], b[0]));
}

function hintsBlock(names: readonly string[], dispatch: boolean): string {
  return [
    "<tool_hints>",
    dispatch
      ? "Deferred tools that may help with this request (read with tool_get, call through tool_call):"
      : "Deferred tools that may help with this request (load with tool_get before calling):",
    ...names.map((n) => `- ${escapeText(n)}`),
    "</tool_hints>",
    "",
  ].join("\n");
}

const sortByName = (tools: readonly Tool[]): Tool[] => [...tools].sort((a, b) => compare(a.name, b.name));

/**
 * Replaces names (and aliases) of tools the caller cannot see with a placeholder, matching whole
 * name-shaped tokens case-insensitively; trailing `.`/`-` (sentence punctuation) are ignored.
 */
function redactor(hidden: readonly Tool[], visible: readonly Tool[]): (text: string) => string {
  const visibleNames = new Set(visible.map((t) => t.name.toLowerCase()));
  const secret = new Set<string>();
  for (const tool of hidden) {
    for (const name of [tool.name, ...tool.aliases]) {
      const lower = name.toLowerCase();
      if (!visibleNames.has(lower)) secret.add(lower);
    }
  }
  if (secret.size === 0) return (text) => text;
  // Aliases kept from original names may hold characters a token never spans; match those as substrings.
  const odd = [...secret].filter((name) => !/^[a-z0-9_.-]+$/.test(name));
  return (text) => {
    let out = text.replace(/[A-Za-z0-9_.-]+/g, (token) => {
      const lower = token.toLowerCase();
      if (secret.has(lower)) return REDACTED;
      const trimmed = lower.slice(0, withoutTrailingPunctuation(lower));
      if (trimmed !== lower && secret.has(trimmed)) return REDACTED + token.slice(trimmed.length);
      return token;
    });
    for (const name of odd) out = replaceAllInsensitive(out, name, REDACTED);
    return out;
  };
}

/**
 * Length of `token` without its trailing `.`/`-`. A scan from the end: `/[.-]+$/` retries every
 * start in a run of dots that does not end the token (quadratic: a long description held the event loop).
 */
function withoutTrailingPunctuation(token: string): number {
  let end = token.length;
  while (end > 0 && (token[end - 1] === "." || token[end - 1] === "-")) end--;
  return end;
}

/** Every `lowerNeedle` in `text` (compared lower-cased) replaced, built in one pass. */
function replaceAllInsensitive(text: string, lowerNeedle: string, replacement: string): string {
  if (lowerNeedle.length === 0) return text;
  const lower = text.toLowerCase();
  // toLowerCase can change lengths for a few code points; then fall back to the lowered text.
  const source = lower.length === text.length ? text : lower;
  let out = "";
  let copied = 0;
  for (let at = lower.indexOf(lowerNeedle); at >= 0; at = lower.indexOf(lowerNeedle, copied)) {
    out += source.slice(copied, at) + replacement;
    copied = at + lowerNeedle.length;
  }
  return copied === 0 ? source : out + source.slice(copied);
}

function scope(caller: Caller): { tenantId: string; sessionId: string; runId: string } {
  return { tenantId: caller.tenantId, sessionId: caller.sessionId, runId: caller.runId };
}
