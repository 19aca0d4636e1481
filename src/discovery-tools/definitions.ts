import type { JsonObject } from "../json.ts";
import { LIMITS, type Limit } from "../limits.ts";
import { TASK_TYPES } from "../skills/index.ts";

const TASK_TYPE: JsonObject = {
  type: "string",
  enum: [...TASK_TYPES],
  description: "Kind of task, to prefer matching skills.",
};

/** A JSON Schema integer bounded (and defaulted) by a row of the limits table. */
function integerSchema(row: Limit): JsonObject {
  return {
    type: "integer",
    minimum: row.min,
    maximum: row.max,
    ...(row.default === undefined ? {} : { default: row.default }),
  };
}

/** A tool the agent shows its model so the model can discover other tools and skills. */
export interface DiscoveryToolDefinition {
  readonly name: string;
  readonly description: string;
  /** JSON Schema (draft 2020-12 compatible subset) of the arguments. */
  readonly argsSchema: JsonObject;
  /** Each validates against `argsSchema` (checked in tests with ajv). */
  readonly examples: readonly { readonly args: JsonObject; readonly description: string }[];
}

const TOOL_SEARCH: DiscoveryToolDefinition = {
  name: "tool_search",
  description:
    "Search the deferred tools for ones that fit a task. Returns names, short descriptions and scores; " +
    "call tool_get with the names you pick to load their full definitions before calling them.",
  argsSchema: {
    type: "object",
    properties: {
      query: {
        type: "string",
        minLength: LIMITS.searchToolsQuery.min,
        maxLength: LIMITS.searchToolsQuery.max,
        description: "What you need to do, in a few words, or a tool name (fts); an RE2 pattern (regex).",
      },
      search_type: {
        type: "string",
        enum: ["fts", "regex", "exact"],
        default: "fts",
        description:
          "fts: ranked keyword search (default); regex: RE2 pattern over names and descriptions; exact: a tool name.",
      },
      limit: { ...integerSchema(LIMITS.searchToolsLimit), description: "Maximum results." },
    },
    required: ["query"],
    additionalProperties: false,
  },
  examples: [
    { args: { query: "list open pull requests" }, description: "Find tools for a task" },
    {
      args: { query: "^github\\.", search_type: "regex", limit: 20 },
      description: "All tools of one namespace",
    },
    { args: { query: "create_issue", search_type: "exact" }, description: "Check one tool by name" },
  ],
};

const TOOL_GET: DiscoveryToolDefinition = {
  name: "tool_get",
  description:
    "Load the full definitions (argument schema, examples) of tools by exact name, as returned by " +
    "tool_search. Loaded tools can then be called.",
  argsSchema: {
    type: "object",
    properties: {
      names: {
        type: "array",
        items: { type: "string", minLength: 1 },
        minItems: LIMITS.getToolsNames.min,
        maxItems: LIMITS.getToolsNames.max,
        uniqueItems: true,
        description: "Exact tool names.",
      },
      include_examples: { type: "boolean", default: true, description: "Include usage examples." },
    },
    required: ["names"],
    additionalProperties: false,
  },
  examples: [
    { args: { names: ["github.create_issue"] }, description: "Load one tool" },
    {
      args: { names: ["github.list_pull_requests", "github.get_pull_request"], include_examples: false },
      description: "Load two tools without examples",
    },
  ],
};

const SKILL_SEARCH: DiscoveryToolDefinition = {
  name: "skill_search",
  description:
    "Search the skills (step-by-step procedures) for one that fits the task; returns names and summaries.",
  argsSchema: {
    type: "object",
    properties: {
      query: {
        type: "string",
        minLength: LIMITS.searchSkillsQuery.min,
        maxLength: LIMITS.searchSkillsQuery.max,
        description: "The task, in a few words.",
      },
      limit: { ...integerSchema(LIMITS.searchSkillsLimit), description: "Maximum results." },
      task_type: TASK_TYPE,
    },
    required: ["query"],
    additionalProperties: false,
  },
  examples: [
    { args: { query: "release a new version" }, description: "Find a procedure for a task" },
    {
      args: { query: "rotate credentials", limit: 3, task_type: "api" },
      description: "Top three API skills",
    },
  ],
};

const SKILL_GET: DiscoveryToolDefinition = {
  name: "skill_get",
  description:
    "Load the full text (steps) of skills by exact name, as returned by skill_search or skill_list.",
  argsSchema: {
    type: "object",
    properties: {
      names: {
        type: "array",
        items: { type: "string", minLength: 1 },
        minItems: LIMITS.getSkillsNames.min,
        maxItems: LIMITS.getSkillsNames.max,
        uniqueItems: true,
        description: "Exact skill names.",
      },
      max_tokens: {
        ...integerSchema(LIMITS.getSkillsMaxTokens),
        description: "Token budget of the returned text (compressed to fit).",
      },
    },
    required: ["names"],
    additionalProperties: false,
  },
  examples: [
    { args: { names: ["pack.core.release"] }, description: "Load one skill" },
    {
      args: { names: ["pack.core.release", "pack.core.changelog"], max_tokens: 2000 },
      description: "Load two skills within 2000 tokens",
    },
  ],
};

const SKILL_LIST: DiscoveryToolDefinition = {
  name: "skill_list",
  description:
    "List available skills (names and one-line summaries), optionally by task type, a page at a time.",
  argsSchema: {
    type: "object",
    properties: {
      task_type: TASK_TYPE,
      page_size: integerSchema(LIMITS.listSkillsPageSize),
      page_token: { type: "string", description: "next_page_token of the previous page." },
    },
    additionalProperties: false,
  },
  examples: [
    { args: {}, description: "First page of all skills" },
    { args: { task_type: "code", page_size: 10 }, description: "First ten coding skills" },
  ],
};

/**
 * Dispatch mode's one tool for every deferred tool: the tools array never changes, so an activation
 * never re-writes the provider's prompt cache. The runtime checks each call with CheckToolCall.
 */
const TOOL_CALL: DiscoveryToolDefinition = {
  name: "tool_call",
  description:
    "Call a tool that is not in your tool list: one you found with tool_search and loaded with tool_get. " +
    "Give its exact name and its arguments as its schema describes; if they do not fit, you get what to fix.",
  argsSchema: {
    type: "object",
    properties: {
      name: {
        type: "string",
        minLength: LIMITS.toolName.min,
        maxLength: LIMITS.toolName.max,
        description: "The exact tool name, as tool_search and tool_get return it.",
      },
      arguments: { type: "object", description: "The tool's arguments, matching its schema." },
    },
    required: ["name", "arguments"],
    additionalProperties: false,
  },
  examples: [
    {
      args: { name: "github.create_issue", arguments: { repo: "acme/api", title: "Login fails" } },
      description: "Call a loaded tool",
    },
  ],
};

export interface DiscoveryToolsOptions {
  /** Also return skill_search, skill_get and skill_list; default true. */
  readonly includeSkillTools?: boolean;
  /** Also return tool_call, dispatch mode's one tool for every deferred tool; default false. */
  readonly includeDispatchTool?: boolean;
}

/** The definitions of the discovery tools, in a fixed order (tool_search, tool_get, tool_call, skill_*). */
export function discoveryToolDefinitions(
  options: DiscoveryToolsOptions = {},
): readonly DiscoveryToolDefinition[] {
  const tools = [TOOL_SEARCH, TOOL_GET];
  if (options.includeDispatchTool) tools.push(TOOL_CALL);
  if (options.includeSkillTools ?? true) tools.push(SKILL_SEARCH, SKILL_GET, SKILL_LIST);
  return tools;
}
