import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Outcome, Provider } from "../gen/ts/wayfind/v1/common_pb.ts";
import { type CreateApiKeyRequestSchema, KeyService } from "../gen/ts/wayfind/v1/keys_pb.ts";
import { SkillScope, SkillService } from "../gen/ts/wayfind/v1/skills_pb.ts";
import { ToolDiscoveryService, type ToolSchema } from "../gen/ts/wayfind/v1/tools_pb.ts";
import { UsageService } from "../gen/ts/wayfind/v1/usage_pb.ts";
import type { JsonObject } from "../src/json.ts";
import { describeLimit, LIMITS, type Limit } from "../src/limits.ts";
import { failure } from "./support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "./support/server.ts";

const PROTO_DIR = join(import.meta.dirname, "..", "proto", "wayfind", "v1");

/** The `//` lines right above each field of each message: "SearchToolsRequest.query" → text. */
function fieldComments(file: string): Map<string, string> {
  const comments = new Map<string, string>();
  let message = "";
  let pending: string[] = [];
  for (const raw of readFileSync(join(PROTO_DIR, file), "utf8").split("\n")) {
    const line = raw.trim();
    const opened = /^message (\w+) \{/.exec(line);
    if (opened) message = opened[1] ?? "";
    const field = /^(?:optional |repeated )?[\w.]+ (\w+) = \d+;/.exec(line);
    if (line.startsWith("//")) pending.push(line.replace(/^\/\/\s?/, ""));
    else {
      if (field) comments.set(`${message}.${field[1]}`, pending.join(" "));
      pending = [];
    }
  }
  return comments;
}

const rows = Object.entries(LIMITS) as [keyof typeof LIMITS, Limit][];
const PROTO_FILES = [
  "common.proto",
  "events.proto",
  "skills.proto",
  "tools.proto",
  "usage.proto",
  "keys.proto",
];

describe("the limits table and the proto comments", () => {
  it.each(rows)("%s: the proto comment of the field states the same range", (_, row) => {
    const comment = fieldComments(row.proto.file).get(`${row.proto.message}.${row.field}`);
    expect(comment, `${row.proto.file} ${row.proto.message}.${row.field}`).toContain(describeLimit(row));
  });

  it("has a row for every field whose proto comment quotes a range", () => {
    const documented = PROTO_FILES.flatMap((file) =>
      [...fieldComments(file)]
        .filter(([, comment]) => /\d[\d,]*–\d[\d,]*/.test(comment))
        .map(([field]) => field),
    );
    const tabled = rows.map(([, row]) => `${row.proto.message}.${row.field}`);
    expect(documented.length).toBeGreaterThan(0);
    expect(documented.filter((field) => !tabled.includes(field))).toEqual([]);
  });
});

let wayfind: RouterTestServer;
const caller = { tenantId: "acme", projectId: "web", sessionId: "s-1", runId: "r-1" };
const toolNames = Array.from({ length: 60 }, (_, i) => `limits.tool_${i}`);
const skillNames = Array.from({ length: 12 }, (_, i) => `limits.skill-${i}`);

beforeAll(async () => {
  wayfind = await startRouterServer();
  await tools().registerTools({
    caller,
    source: "limits",
    tools: toolNames.map((name) => ({ name, description: `Does task ${name}` })),
  });
  await skills().loadSkillPack({
    caller,
    packName: "limits",
    scope: SkillScope.TENANT,
    source: { case: "files", value: { files: skillNames.map(skillFile) } },
  });
});
afterAll(() => wayfind.stop());

const tools = () => wayfind.grpc(ToolDiscoveryService);
type ToolInit = MessageInitShape<typeof ToolSchema>;
const skills = () => wayfind.grpc(SkillService);
/** CreateApiKey of an agent key with some fields set. */
const createKey = (fields: Omit<MessageInitShape<typeof CreateApiKeyRequestSchema>, "$typeName">) =>
  wayfind.grpc(KeyService).createApiKey({ caller, roles: ["agent"], ...fields });
const text = (size: number) => "a".repeat(size);

function skillFile(name: string) {
  return {
    path: `${name}.skill.md`,
    content: `---\nname: ${name}\ntrigger: deploy the service ${name}\nsteps: [build, ship]\n---\n`,
  };
}

/** An args schema of exactly `values` JSON values: the root, `type`, `properties` and empty schemas. */
function schemaOfValues(values: number): JsonObject {
  if (values === 1) return {};
  if (values === 2) return { type: "object" };
  const properties: JsonObject = Object.fromEntries(
    Array.from({ length: values - 3 }, (_, i) => [`p${i}`, {}]),
  );
  return { type: "object", properties };
}

/** JSON `levels` deep (an args schema, or example args): `items` inside `items`. */
function jsonOfDepth(levels: number): JsonObject {
  let schema: JsonObject = {};
  for (let level = 1; level < levels; level++) schema = { items: schema };
  return schema;
}

/** RegisterTools with one tool, each in a source of its own. */
function registerOne(tool: ToolInit) {
  return tools().registerTools({ caller, source: `one-${tool.name?.slice(0, 50)}`, tools: [tool] });
}

/** For each row, a call whose bounded field has `size` (a length, a count or the value itself). */
const callWith: Record<keyof typeof LIMITS, (size: number) => Promise<unknown>> = {
  eventFilterTool: async (size) => {
    // A stream: its first message (the status) says the filter was accepted.
    for await (const first of tools().watchToolEvents({ caller, filter: { tool: text(size) } })) return first;
    throw new Error("the stream ended before its status");
  },
  narrowToTools: (size) =>
    tools().searchTools({
      caller: { ...caller, narrowToTools: Array.from({ length: size }, (_, i) => `limits.tool_${i}*`) },
      query: "task",
    }),
  narrowToToolsPattern: (size) =>
    tools().searchTools({ caller: { ...caller, narrowToTools: [text(size)] }, query: "task" }),
  toolName: (size) => registerOne({ name: `t${"a".repeat(size - 1)}` }),
  toolTitle: (size) => registerOne({ name: "titled", title: text(size) }),
  toolDescription: (size) => registerOne({ name: "described", description: text(size) }),
  toolTags: (size) =>
    registerOne({ name: "tagged", tags: Array.from({ length: size }, (_, i) => `tag${i}`) }),
  toolTag: (size) => registerOne({ name: "tagged_once", tags: [text(size)] }),
  toolExamples: (size) =>
    registerOne({
      name: "exemplified",
      examples: Array.from({ length: size }, (_, i) => ({ args: {}, description: `example ${i}` })),
    }),
  toolArgsSchemaBytes: (size) => {
    const unpadded = JSON.stringify({ type: "object", description: "" }).length;
    return registerOne({
      name: "large_schema",
      argsSchema: { type: "object", description: text(size - unpadded) },
    });
  },
  toolArgsSchemaNodes: (size) =>
    registerOne({ name: "wide_schema", argsSchema: schemaOfValues(size), examples: [{ args: {} }] }),
  toolArgsSchemaDepth: (size) =>
    registerOne({ name: "deep_schema", argsSchema: jsonOfDepth(size), examples: [{ args: {} }] }),
  toolExampleArgsDepth: (size) =>
    registerOne({ name: "deep_example", examples: [{ args: jsonOfDepth(size) }] }),
  toolExampleArgsBytes: (size) => {
    const unpadded = JSON.stringify({ note: "" }).length;
    return registerOne({ name: "large_example", examples: [{ args: { note: text(size - unpadded) } }] });
  },
  registerToolsCompiledSchemaNodes: (size) => {
    const perTool = LIMITS.toolArgsSchemaNodes.max;
    const sizes = Array.from({ length: Math.ceil(size / perTool) }, (_, i) =>
      Math.min(perTool, size - i * perTool),
    );
    return tools().registerTools({
      caller,
      source: "compiled",
      tools: sizes.map(
        (values, i): ToolInit => ({
          name: `compiled.t${i}`,
          argsSchema: schemaOfValues(values),
          examples: [{ args: {} }],
        }),
      ),
    });
  },
  toolAliases: (size) =>
    registerOne({ name: "aliased", aliases: Array.from({ length: size }, (_, i) => `aliased_${i}`) }),
  toolAlias: (size) => registerOne({ name: "aliased_once", aliases: [`a${"b".repeat(size - 1)}`] }),
  activateToolsReason: (size) =>
    tools().activateTools({ caller, names: [toolNames[0] ?? ""], reason: text(size) }),
  usageModel: (size) =>
    wayfind.grpc(UsageService).recordUsage({
      caller,
      provider: Provider.ANTHROPIC,
      model: text(size),
      usage: { inputTokens: 10n, outputTokens: 2n },
      idempotencyKey: `model-${size}`,
    }),
  searchToolsQuery: (size) => tools().searchTools({ caller, query: text(size) }),
  searchToolsLimit: (size) => tools().searchTools({ caller, query: "task", limit: size }),
  searchToolsMinScore: (size) => tools().searchTools({ caller, query: "task", minScore: size }),
  searchSkillsMinScore: (size) => skills().searchSkills({ caller, query: "task", minScore: size }),
  relevantSkillsMinScore: (size) => skills().getRelevantSkills({ caller, task: "a task", minScore: size }),
  listToolsPageSize: (size) => tools().listTools({ caller, pageSize: size }),
  // The operator alone lists tenants.
  listTenantsPageSize: (size) =>
    tools().listTenants({ pageSize: size }, { headers: { "wayfind-role": "admin" } }),
  registerToolsSource: (size) => tools().registerTools({ caller, source: text(size), tools: [] }),
  registerToolsTools: (size) =>
    tools().registerTools({
      caller,
      source: "bulk",
      tools: Array.from({ length: size }, (_, i) => ({ name: `bulk.t${i}`, description: "Bulk tool" })),
    }),
  getToolsNames: (size) => tools().getTools({ caller, names: toolNames.slice(0, size) }),
  activateToolsNames: (size) => tools().activateTools({ caller, names: toolNames.slice(0, size) }),
  directoryMaxEntries: (size) =>
    tools().renderToolPrompt({ caller, includeDirectory: true, directoryMaxEntries: size }),
  hintLimit: (size) => tools().renderToolPrompt({ caller, hintMessage: "do a task", hintLimit: size }),
  maxExamplesPerTool: (size) => tools().renderToolPrompt({ caller, maxExamplesPerTool: size }),
  packName: (size) =>
    skills().loadSkillPack({
      caller,
      packName: text(size),
      scope: SkillScope.TENANT,
      source: { case: "files", value: { files: [skillFile("named")] } },
    }),
  inlinePackFiles: (size) =>
    skills().loadSkillPack({
      caller,
      packName: "many",
      scope: SkillScope.TENANT,
      source: {
        case: "files",
        value: { files: Array.from({ length: size }, (_, i) => skillFile(`many.skill-${i}`)) },
      },
    }),
  searchSkillsQuery: (size) => skills().searchSkills({ caller, query: text(size) }),
  searchSkillsLimit: (size) => skills().searchSkills({ caller, query: "deploy", limit: size }),
  getSkillsNames: (size) => skills().getSkills({ caller, names: skillNames.slice(0, size) }),
  getSkillsName: (size) => skills().getSkills({ caller, names: [skillNames[0] ?? "", text(size)] }),
  getSkillsMaxTokens: (size) => skills().getSkills({ caller, names: [skillNames[0] ?? ""], maxTokens: size }),
  listSkillsPageSize: (size) => skills().listSkills({ caller, pageSize: size }),
  relevantSkillsTask: (size) => skills().getRelevantSkills({ caller, task: text(size) }),
  relevantSkillsTopK: (size) => skills().getRelevantSkills({ caller, task: "deploy", topK: size }),
  relevantSkillsMaxTokens: (size) => skills().getRelevantSkills({ caller, task: "deploy", maxTokens: size }),
  skillDirectoryMaxEntries: (size) => skills().renderSkillDirectory({ caller, maxEntries: size }),
  idempotencyKey: (size) =>
    wayfind.grpc(UsageService).recordUsage({
      caller,
      provider: Provider.ANTHROPIC,
      model: "claude-sonnet-4-5",
      usage: { inputTokens: 10n, outputTokens: 2n },
      idempotencyKey: text(size),
    }),
  reportToolOutcomeSearchId: (size) => reportTool({ searchId: text(size) }),
  reportToolOutcomeTool: async (size) => {
    const name = `t${"a".repeat(size - 1)}`;
    if (size <= LIMITS.toolName.max) await registerOne({ name });
    return reportTool({ tool: name });
  },
  reportToolOutcomeNote: (size) => reportTool({ note: text(size) }),
  reportToolOutcomeKey: (size) => reportTool({ idempotencyKey: `tool-${text(size - 5)}` }),
  reportSkillOutcomeSearchId: (size) => reportSkill({ searchId: text(size) }),
  reportSkillOutcomeSkill: async (size) => {
    const name = `s${"a".repeat(size - 1)}`;
    if (size <= 128)
      await skills().loadSkillPack({
        caller,
        packName: "limits-long-name",
        scope: SkillScope.TENANT,
        source: { case: "files", value: { files: [skillFile(name)] } },
      });
    return reportSkill({ skill: name });
  },
  reportSkillOutcomeNote: (size) => reportSkill({ note: text(size) }),
  reportSkillOutcomeKey: (size) => reportSkill({ idempotencyKey: `skill-${text(size - 6)}` }),
  keyId: (size) => createKey({ id: text(size) }),
  keyTenantId: (size) => createKey({ caller: { tenantId: text(size) }, tenantId: text(size) }),
  keyRoles: (size) =>
    createKey({ roles: Array.from({ length: size }, (_, i) => ["agent", "observer", "admin"][i % 3] ?? "") }),
  keyProjects: (size) => createKey({ projects: Array.from({ length: size }, (_, i) => `project-${i}`) }),
  keyProject: (size) => createKey({ projects: [text(size)] }),
  keyEntitlements: (size) =>
    createKey({ entitlements: Array.from({ length: size }, (_, i) => `entitlement-${i}`) }),
  keyEntitlement: (size) => createKey({ entitlements: [text(size)] }),
  keyExpiresInSeconds: (size) => createKey({ expiry: { case: "expiresInSeconds", value: BigInt(size) } }),
  // A tool of no MCP server: FAILED_PRECONDITION, which is past the size check, so it counts as accepted.
  callToolTimeoutSeconds: (size) =>
    refusedAfterSizeCheck(
      tools().callTool({ caller, name: toolNames[0], timeoutSeconds: size }),
      Code.FailedPrecondition,
    ),
  callToolArgumentsDepth: (size) =>
    refusedAfterSizeCheck(
      tools().callTool({ caller, name: toolNames[0], arguments: jsonOfDepth(size) }),
      Code.FailedPrecondition,
    ),
  callToolArgumentsValues: (size) =>
    refusedAfterSizeCheck(
      tools().callTool({ caller, name: toolNames[0], arguments: { list: Array(size - 2).fill(0) } }),
      Code.FailedPrecondition,
    ),
  checkToolCallArgumentsDepth: (size) =>
    tools().checkToolCall({ caller, name: toolNames[0], arguments: jsonOfDepth(size) }),
  checkToolCallArgumentsValues: (size) =>
    tools().checkToolCall({ caller, name: toolNames[0], arguments: { list: Array(size - 2).fill(0) } }),
};

/** A call refused with `code` after its sizes were checked; any other outcome is thrown. */
async function refusedAfterSizeCheck(call: Promise<unknown>, code: Code): Promise<unknown> {
  const error = await failure(call);
  if (error.code !== code) throw error;
  return error;
}

/**
 * An outcome report with one field changed. A search id within the limit names no remembered search:
 * NOT_FOUND, which is past the size check, so it counts as accepted.
 */
function reportTool(fields: { searchId?: string; tool?: string; note?: string; idempotencyKey?: string }) {
  return acceptedUnknownSearch(
    tools().reportToolOutcome({ caller, tool: toolNames[0], outcome: Outcome.SUCCEEDED, ...fields }),
    fields.searchId,
  );
}

function reportSkill(fields: { searchId?: string; skill?: string; note?: string; idempotencyKey?: string }) {
  return acceptedUnknownSearch(
    skills().reportSkillOutcome({ caller, skill: skillNames[0], outcome: Outcome.SUCCEEDED, ...fields }),
    fields.searchId,
  );
}

async function acceptedUnknownSearch(call: Promise<unknown>, searchId: string | undefined): Promise<unknown> {
  if (searchId === undefined || searchId.length > LIMITS.reportToolOutcomeSearchId.max) return call;
  const error = await failure(call);
  if (error.code !== Code.NotFound) throw error;
  return error;
}

describe.each(rows)("limit %s", (key, row) => {
  const call = callWith[key];

  it(`rejects ${row.max + 1} with INVALID_ARGUMENT naming ${row.field} and the limit`, async () => {
    const error = await failure(call(row.max + 1));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain(row.field);
    expect(error.rawMessage).toContain(row.max.toLocaleString("en-US"));
  });

  it(`accepts ${row.max}`, async () => {
    await expect(call(row.max)).resolves.toBeDefined();
  });
});
