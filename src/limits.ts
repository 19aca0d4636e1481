import { invalidArgument, type WayfindError } from "./errors.ts";

/**
 * One bound on a request field. The proto comment of the field states the same range (and default):
 * test/limits.test.ts reads proto/wayfind/v1/*.proto and holds the two together.
 */
export interface Limit {
  /** Where the contract states it: the .proto file (in proto/wayfind/v1/) and the message. */
  readonly proto: { readonly file: string; readonly message: string };
  /** The field as the proto names it; error messages name it so. */
  readonly field: string;
  readonly min: number;
  readonly max: number;
  /** Used when the field is left unset (0). */
  readonly default?: number;
  /** What a length or count measures ("characters", "names"); none for plain numbers. */
  readonly unit?: string;
}

/**
 * Every numeric bound of the API, in one table: the code checks these rows (never its own literal),
 * the proto comments quote them, and an over-limit value is INVALID_ARGUMENT naming the field and
 * the range. Where code and docs disagreed, the docs (the contract) won.
 */
export const LIMITS = {
  eventFilterTool: limit("events", "EventFilter", "tool", 0, 128, { unit: "characters" }),
  narrowToTools: limit("common", "CallerContext", "narrow_to_tools", 0, 100, { unit: "patterns" }),
  narrowToToolsPattern: limit("common", "CallerContext", "narrow_to_tools", 1, 256, {
    unit: "characters each",
  }),
  toolName: limit("tools", "Tool", "name", 1, 128, { unit: "characters" }),
  toolTitle: limit("tools", "Tool", "title", 0, 256, { unit: "characters" }),
  toolDescription: limit("tools", "Tool", "description", 0, 16_384, { unit: "characters" }),
  toolTags: limit("tools", "Tool", "tags", 0, 32, { unit: "tags" }),
  toolTag: limit("tools", "Tool", "tags", 1, 64, { unit: "characters each" }),
  toolArgsSchemaBytes: limit("tools", "Tool", "args_schema", 0, 65_536, { unit: "bytes of JSON" }),
  toolArgsSchemaNodes: limit("tools", "Tool", "args_schema", 1, 1_000, { unit: "JSON values" }),
  toolArgsSchemaDepth: limit("tools", "Tool", "args_schema", 1, 32, { unit: "levels of nesting" }),
  toolExamples: limit("tools", "Tool", "examples", 0, 16, { unit: "examples" }),
  toolExampleArgsBytes: limit("tools", "ToolExample", "args", 0, 16_384, { unit: "bytes of JSON" }),
  toolExampleArgsDepth: limit("tools", "ToolExample", "args", 1, 32, { unit: "levels of nesting" }),
  toolAliases: limit("tools", "Tool", "aliases", 0, 16, { unit: "aliases" }),
  toolAlias: limit("tools", "Tool", "aliases", 1, 128, { unit: "characters each" }),
  searchToolsQuery: limit("tools", "SearchToolsRequest", "query", 1, 512, { unit: "characters" }),
  searchToolsLimit: limit("tools", "SearchToolsRequest", "limit", 1, 20, { default: 8 }),
  searchToolsMinScore: limit("tools", "SearchToolsRequest", "min_score", 0, 1, {}),
  listToolsPageSize: limit("tools", "ListToolsRequest", "page_size", 1, 500, { default: 100 }),
  listTenantsPageSize: limit("tools", "ListTenantsRequest", "page_size", 1, 1_000, { default: 1_000 }),
  registerToolsSource: limit("tools", "RegisterToolsRequest", "source", 1, 64, { unit: "characters" }),
  registerToolsTools: limit("tools", "RegisterToolsRequest", "tools", 0, 5_000, { unit: "tools" }),
  registerToolsCompiledSchemaNodes: limit("tools", "RegisterToolsRequest", "tools", 0, 10_000, {
    unit: "JSON values in the args schemas of tools with examples",
  }),
  getToolsNames: limit("tools", "GetToolsRequest", "names", 1, 20, { unit: "names" }),
  activateToolsNames: limit("tools", "ActivateToolsRequest", "names", 1, 50, { unit: "names" }),
  activateToolsReason: limit("tools", "ActivateToolsRequest", "reason", 0, 256, { unit: "characters" }),
  directoryMaxEntries: limit("tools", "RenderToolPromptRequest", "directory_max_entries", 1, 200, {
    default: 30,
    unit: "entries",
  }),
  hintLimit: limit("tools", "RenderToolPromptRequest", "hint_limit", 1, 10, { default: 3 }),
  maxExamplesPerTool: limit("tools", "RenderToolPromptRequest", "max_examples_per_tool", 0, 10, {
    default: 3,
  }),
  packName: limit("skills", "LoadSkillPackRequest", "pack_name", 1, 64, { unit: "characters" }),
  inlinePackFiles: limit("skills", "LoadSkillPackRequest", "files", 0, 1_000, { unit: "files" }),
  searchSkillsQuery: limit("skills", "SearchSkillsRequest", "query", 1, 512, { unit: "characters" }),
  searchSkillsLimit: limit("skills", "SearchSkillsRequest", "limit", 1, 20, { default: 5 }),
  searchSkillsMinScore: limit("skills", "SearchSkillsRequest", "min_score", 0, 1, {}),
  relevantSkillsMinScore: limit("skills", "GetRelevantSkillsRequest", "min_score", 0, 1, {}),
  getSkillsNames: limit("skills", "GetSkillsRequest", "names", 1, 10, { unit: "names" }),
  getSkillsName: limit("skills", "GetSkillsRequest", "names", 1, 128, { unit: "characters each" }),
  getSkillsMaxTokens: limit("skills", "GetSkillsRequest", "max_tokens", 200, 6_000, { default: 1_500 }),
  listSkillsPageSize: limit("skills", "ListSkillsRequest", "page_size", 1, 100, { default: 50 }),
  relevantSkillsTask: limit("skills", "GetRelevantSkillsRequest", "task", 1, 4_000, { unit: "characters" }),
  relevantSkillsTopK: limit("skills", "GetRelevantSkillsRequest", "top_k", 1, 10, { default: 3 }),
  relevantSkillsMaxTokens: limit("skills", "GetRelevantSkillsRequest", "max_tokens", 200, 6_000, {
    default: 1_500,
  }),
  skillDirectoryMaxEntries: limit("skills", "RenderSkillDirectoryRequest", "max_entries", 1, 200, {
    default: 30,
  }),
  usageModel: limit("usage", "RecordUsageRequest", "model", 1, 200, { unit: "characters" }),
  idempotencyKey: limit("usage", "RecordUsageRequest", "idempotency_key", 1, 128, { unit: "characters" }),
  reportToolOutcomeSearchId: limit("tools", "ReportToolOutcomeRequest", "search_id", 0, 64, {
    unit: "characters",
  }),
  reportToolOutcomeTool: limit("tools", "ReportToolOutcomeRequest", "tool", 1, 128, { unit: "characters" }),
  reportToolOutcomeNote: limit("tools", "ReportToolOutcomeRequest", "note", 0, 1_000, { unit: "characters" }),
  callToolTimeoutSeconds: limit("tools", "CallToolRequest", "timeout_seconds", 0, 600, {}),
  callToolArgumentsDepth: limit("tools", "CallToolRequest", "arguments", 1, 32, {
    unit: "levels of nesting",
  }),
  callToolArgumentsValues: limit("tools", "CallToolRequest", "arguments", 1, 100_000, {
    unit: "JSON values",
  }),
  checkToolCallArgumentsDepth: limit("tools", "CheckToolCallRequest", "arguments", 1, 32, {
    unit: "levels of nesting",
  }),
  checkToolCallArgumentsValues: limit("tools", "CheckToolCallRequest", "arguments", 1, 100_000, {
    unit: "JSON values",
  }),
  reportToolOutcomeKey: limit("tools", "ReportToolOutcomeRequest", "idempotency_key", 0, 128, {
    unit: "characters",
  }),
  reportSkillOutcomeSearchId: limit("skills", "ReportSkillOutcomeRequest", "search_id", 0, 64, {
    unit: "characters",
  }),
  reportSkillOutcomeSkill: limit("skills", "ReportSkillOutcomeRequest", "skill", 1, 128, {
    unit: "characters",
  }),
  reportSkillOutcomeNote: limit("skills", "ReportSkillOutcomeRequest", "note", 0, 1_000, {
    unit: "characters",
  }),
  reportSkillOutcomeKey: limit("skills", "ReportSkillOutcomeRequest", "idempotency_key", 0, 128, {
    unit: "characters",
  }),
  keyId: limit("keys", "CreateApiKeyRequest", "id", 0, 64, { unit: "characters" }),
  keyTenantId: limit("keys", "CreateApiKeyRequest", "tenant_id", 0, 128, { unit: "characters" }),
  keyRoles: limit("keys", "CreateApiKeyRequest", "roles", 1, 3, { unit: "roles" }),
  keyProjects: limit("keys", "CreateApiKeyRequest", "projects", 0, 100, { unit: "projects" }),
  keyProject: limit("keys", "CreateApiKeyRequest", "projects", 1, 128, { unit: "characters each" }),
  keyEntitlements: limit("keys", "CreateApiKeyRequest", "entitlements", 0, 100, { unit: "entitlements" }),
  keyEntitlement: limit("keys", "CreateApiKeyRequest", "entitlements", 1, 128, { unit: "characters each" }),
  keyExpiresInSeconds: limit("keys", "CreateApiKeyRequest", "expires_in_seconds", 1, 315_360_000, {}),
} as const satisfies Record<string, Limit>;

function limit<const Extra extends { readonly default?: number; readonly unit?: string }>(
  file: "common" | "events" | "tools" | "skills" | "usage" | "keys",
  message: string,
  field: string,
  min: number,
  max: number,
  extra: Extra,
): Limit & Extra {
  return { proto: { file: `${file}.proto`, message }, field, min, max, ...extra };
}

/** "1–512 characters", "1–20, default 8": the range as the proto comments write it. */
export function describeLimit(row: Limit): string {
  const fallback = row.default === undefined ? "" : `, default ${grouped(row.default)}`;
  return `${rangeOf(row)}${fallback}`;
}

/** Throws INVALID_ARGUMENT when a length or count is outside the row's range. */
export function checkSize(row: Limit, size: number): void {
  if (size < row.min || size > row.max) throw outOfRange(row, size);
}

/** What is wrong with a length or count ("tags must have 0–32 tags, got 40"), or undefined. */
export function sizeProblem(row: Limit, size: number): string | undefined {
  return size < row.min || size > row.max ? outOfRangeText(row, size) : undefined;
}

/**
 * The value, or the row's default when undefined; INVALID_ARGUMENT when outside the range. (The RPC
 * layer turns a proto3 number left out, 0, into undefined.)
 */
export function withinLimit(row: Limit, value: number | undefined): number {
  if (value === undefined && row.default !== undefined) return row.default;
  if (value === undefined || !Number.isInteger(value) || value < row.min || value > row.max)
    throw outOfRange(row, value);
  return value;
}

/** A fractional value (a score threshold) within the row's range; unset is the range's minimum. */
export function withinRange(row: Limit, value: number | undefined): number {
  if (value === undefined) return row.min;
  if (!Number.isFinite(value) || value < row.min || value > row.max) throw outOfRange(row, value);
  return value;
}

function rangeOf(row: Limit): string {
  const unit = row.unit ? ` ${row.unit}` : "";
  return `${grouped(row.min)}–${grouped(row.max)}${unit}`;
}

/** 10000 → "10,000". Not toLocaleString: its first call loads locale data, inside a call's turn. */
function grouped(n: number): string {
  const [whole = "", fraction] = String(n).split(".");
  const digits = whole.replace("-", "");
  let out = "";
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ",";
    out += digits[i];
  }
  return `${whole.startsWith("-") ? "-" : ""}${out}${fraction === undefined ? "" : `.${fraction}`}`;
}

/**
 * INVALID_ARGUMENT for a value outside the row's range. A row of a request message names a field of
 * the request itself, so it also goes into the BadRequest; a nested one (Tool.tags) does not say
 * which element, and the caller's message names it instead.
 */
function outOfRange(row: Limit, got: number | undefined): WayfindError {
  const description = outOfRangeText(row, got);
  const ofRequest = row.proto.message.endsWith("Request");
  return invalidArgument(description, ofRequest ? [{ field: row.field, description }] : undefined);
}

function outOfRangeText(row: Limit, got: number | undefined): string {
  const verb = row.unit ? "have" : "be";
  return `${row.field} must ${verb} ${rangeOf(row)}, got ${got ?? "none"}`;
}
