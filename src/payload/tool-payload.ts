import { invalidArgument } from "../errors.ts";
import { canonicalJson } from "../json.ts";
import { toGeminiSchema } from "./gemini-schema.ts";
import { isJsonObject, type JsonObject, sha256Hex } from "./json.ts";
import { ToolNameMapper } from "./names.ts";

export const PAYLOAD_PROVIDERS = ["anthropic", "openai", "gemini"] as const;
export type PayloadProvider = (typeof PAYLOAD_PROVIDERS)[number];

export interface PayloadTool {
  /** Catalog name, e.g. `github.create_issue`; mapped to a provider-safe name (see names.ts). */
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments; must be an object schema (a missing `type` is taken as `object`). */
  readonly inputSchema: JsonObject;
  /**
   * The tool's loading mode is deferred: it is shown because it was activated (or, with `nativeSearch`,
   * so the provider can search it). Deferred tools never carry the cache breakpoint.
   */
  readonly deferred: boolean;
}

export interface RenderToolPayloadRequest {
  readonly provider: PayloadProvider;
  /** In the order to send: stable tools first, then activated tools in activation order. Never re-sorted. */
  readonly tools: readonly PayloadTool[];
  /** Anthropic only: send deferred tools with `defer_loading: true` plus the BM25 tool search tool. */
  readonly nativeSearch?: boolean;
}

export interface RenderedToolPayload {
  /** Canonical JSON (sorted keys, no whitespace) of the provider's `tools` value. */
  readonly payloadJson: string;
  /** sha256 (hex) of the UTF-8 bytes of `payloadJson` up to and including the breakpoint tool. */
  readonly prefixHash: string;
  /** Length in UTF-8 bytes of that prefix. */
  readonly prefixBytes: number;
  /** Index of the breakpoint tool in the rendered tool list; -1 when no tool is stable (prefix = opening bytes). */
  readonly breakpointIndex: number;
  /** Provider tool name → catalog name, for every rendered tool, to resolve a model's call back. */
  readonly toolNames: Readonly<Record<string, string>>;
}

/** Anthropic's server-side tool search; it must be present when any tool has `defer_loading`. */
const ANTHROPIC_TOOL_SEARCH_TOOL: JsonObject = {
  type: "tool_search_tool_bm25_20251119",
  name: "tool_search_tool_bm25",
};

const EPHEMERAL: JsonObject = { type: "ephemeral" };

/**
 * Renders the provider's `tools` JSON so that the prefix up to the last stable tool stays byte-identical
 * while tools activate: we keep the caller's order, render with canonical JSON, and place the breakpoint on
 * the last non-deferred tool. Shapes:
 * - anthropic: `[{name, description, input_schema, cache_control?, defer_loading?}]` (Messages API).
 * - openai: Chat Completions `[{type: "function", function: {name, description, parameters}}]`. `strict` is
 *   not set: strict mode requires every property required and `additionalProperties: false`, which catalog
 *   schemas rarely satisfy. OpenAI caches prefixes automatically, so there is no marker; the breakpoint
 *   only names the prefix.
 * - gemini: `{functionDeclarations: [{name, description, parameters?}]}` with the schema converted to
 *   Gemini's OpenAPI subset (see gemini-schema.ts); `parameters` is omitted for a tool without arguments.
 */
export function renderToolPayload(request: RenderToolPayloadRequest): RenderedToolPayload {
  const { provider, tools } = request;
  if (!PAYLOAD_PROVIDERS.includes(provider)) {
    throw invalidArgument(
      `provider "${String(provider)}" is not supported; use one of ${PAYLOAD_PROVIDERS.join(", ")}`,
    );
  }
  const nativeSearch = request.nativeSearch === true;
  if (nativeSearch && provider !== "anthropic") {
    throw invalidArgument(`nativeSearch is only supported for provider anthropic, not ${provider}`);
  }
  validateTools(tools);

  const mapper = new ToolNameMapper();
  const searchable = nativeSearch && tools.some((t) => t.deferred);
  const offset = searchable ? 1 : 0;
  const lastStable = tools.findLastIndex((t) => !t.deferred);
  // With no stable caller tool, the (always stable) search tool carries the breakpoint.
  const breakpointIndex = lastStable >= 0 ? offset + lastStable : searchable ? 0 : -1;
  const items: string[] = [];
  if (searchable) {
    const search =
      breakpointIndex === 0
        ? { ...ANTHROPIC_TOOL_SEARCH_TOOL, cache_control: EPHEMERAL }
        : ANTHROPIC_TOOL_SEARCH_TOOL;
    items.push(canonicalJson(search));
    mapper.reserve(String(ANTHROPIC_TOOL_SEARCH_TOOL.name));
  }
  for (const tool of tools) {
    const name = mapper.map(tool.name);
    const isBreakpoint = items.length === breakpointIndex;
    items.push(
      canonicalJson(
        renderOne(provider, tool, name, normaliseSchema(tool.inputSchema), isBreakpoint, nativeSearch),
      ),
    );
  }

  const [open, close] = provider === "gemini" ? ['{"functionDeclarations":[', "]}"] : ["[", "]"];
  const prefix = breakpointIndex < 0 ? open : open + items.slice(0, breakpointIndex + 1).join(",");
  return {
    payloadJson: `${open}${items.join(",")}${close}`,
    prefixHash: sha256Hex(prefix),
    prefixBytes: Buffer.byteLength(prefix, "utf8"),
    breakpointIndex,
    toolNames: mapper.originals(),
  };
}

function renderOne(
  provider: PayloadProvider,
  tool: PayloadTool,
  name: string,
  schema: JsonObject,
  isBreakpoint: boolean,
  nativeSearch: boolean,
): JsonObject {
  switch (provider) {
    case "anthropic": {
      const out: Record<string, JsonObject | string | boolean> = {
        name,
        description: tool.description,
        input_schema: schema,
      };
      if (isBreakpoint) out.cache_control = EPHEMERAL;
      if (nativeSearch && tool.deferred) out.defer_loading = true;
      return out;
    }
    case "openai":
      return { type: "function", function: { name, description: tool.description, parameters: schema } };
    case "gemini": {
      const parameters = toGeminiSchema(schema);
      const hasArgs = isJsonObject(parameters.properties) && Object.keys(parameters.properties).length > 0;
      // Gemini rejects an OBJECT schema with no properties; a tool without arguments simply omits them.
      return hasArgs
        ? { name, description: tool.description, parameters }
        : { name, description: tool.description };
    }
  }
}

function normaliseSchema(schema: JsonObject): JsonObject {
  return schema.type === undefined ? { type: "object", ...schema } : schema;
}

function validateTools(tools: readonly PayloadTool[]): void {
  if (!Array.isArray(tools)) throw invalidArgument("tools must be a list");
  const problems: string[] = [];
  const seen = new Set<string>();
  tools.forEach((tool, i) => {
    const at = `tools[${i}]`;
    if (typeof tool.name !== "string" || tool.name.length === 0)
      problems.push(`${at}.name: must be a non-empty string`);
    else if (seen.has(tool.name)) problems.push(`${at}.name: "${tool.name}" appears more than once`);
    else seen.add(tool.name);
    if (typeof tool.description !== "string") problems.push(`${at}.description: must be a string`);
    if (!isJsonObject(tool.inputSchema)) problems.push(`${at}.inputSchema: must be a JSON Schema object`);
    else if (tool.inputSchema.type !== undefined && tool.inputSchema.type !== "object") {
      problems.push(`${at}.inputSchema: type must be "object" (tool arguments are an object)`);
    }
    if (typeof tool.deferred !== "boolean") problems.push(`${at}.deferred: must be true or false`);
  });
  if (problems.length > 0) throw invalidArgument(`invalid tools: ${problems[0]}`, problems);
}
