import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ActivationScope,
  LoadingMode,
  type Tool as ProtoTool,
  SideEffect,
  TenantOrigin,
  type ToolDiscoveryService,
} from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import {
  ACTIVATION_SCOPES,
  LOADING_MODES,
  MATCH_TYPES,
  payloadProviderFromProto,
  SEARCH_TYPES,
  SIDE_EFFECTS,
  SOURCE_KINDS,
} from "../../api-enums/enums.ts";
import { authorizeTenantListing, sourceListingFor, toolOwnerFor } from "../../caller/authorize.ts";
import type { Tool, ToolInput } from "../../discovery/index.ts";
import { jsonSchemaProblems } from "../../discovery/schema-dialects.ts";
import { argsSchemaProblem, compiledSchemaValues } from "../../discovery/validate.ts";
import { discoveryToolDefinitions as discoveryTools } from "../../discovery-tools/index.ts";
import { type FieldViolation, invalidArgument, quoteInput } from "../../errors.ts";
import type { EventLog } from "../../events/index.ts";
import type { JsonObject } from "../../json.ts";
import { checkSize, LIMITS, withinLimit } from "../../limits.ts";
import { firstSentence } from "../../search/scores.ts";
import { runInSlices } from "../../slices.ts";
import type { ToolSourceRegistry } from "../../sources/status.ts";
import { traceContextFields } from "../../telemetry.ts";
import { estimateTokens } from "../../text/tokens.ts";
import { repairMessage } from "../../tools/call-check.ts";
import { SESSION_CALL } from "../../tools/mcp-session.ts";
import type { ToolService } from "../../tools/service.ts";
import { callerOf, callSignal, principalOf } from "../pipeline.ts";
import { type TenantOrigin as Origin, type TenantLookups, tenantPage } from "../tenant-directory.ts";
import { outcomeReportOf } from "./outcome-report.ts";
import { searchReportToProto } from "./search-report.ts";
import { TOOL_EVENT_TYPES, watchEvents } from "./watch.ts";

const TENANT_ORIGINS_PROTO: Readonly<Record<Origin, TenantOrigin>> = {
  api_key: TenantOrigin.API_KEY,
  visibility_rule: TenantOrigin.VISIBILITY_RULE,
  usage: TenantOrigin.USAGE,
  events: TenantOrigin.EVENTS,
};

/**
 * The tools whose args schema is not a JSON Schema (`{type: "objekt"}`), one step per tool. A caller
 * registers the schemas it wrote: such a schema is refused, rather than let CheckToolCall pass every
 * call to it.
 */
function* schemaViolations(inputs: readonly ToolInput[]): Generator<void, FieldViolation[]> {
  const violations: FieldViolation[] = [];
  for (const [i, input] of inputs.entries()) {
    yield;
    const schema = input.argsSchema;
    // Oversize schemas are refused for their size by the registration, before anything reads them.
    if (!schema || argsSchemaProblem(schema) !== undefined) continue;
    const problems = jsonSchemaProblems(schema);
    if (problems.length > 0)
      violations.push({
        field: `tools[${i}].args_schema`,
        description: `tool ${quoteInput(input.name)}: args schema is not a valid JSON Schema at ${problems.map((p) => `${p.path}: ${p.message}`).join("; at ")}`,
      });
  }
  return violations;
}

/** Every tool named, the first in the message. */
function refuseInvalidSchemas(violations: readonly FieldViolation[]): void {
  const [first] = violations;
  if (first) throw invalidArgument(first.description, violations);
}

/** Sources callers may register (length bound by LIMITS.registerToolsSource). */
const API_SOURCE = /^[A-Za-z0-9_.-]+$/;

export function toolDiscoveryService(
  tools: ToolService,
  events: EventLog,
  tenants: TenantLookups,
  sources?: ToolSourceRegistry,
): ServiceImpl<typeof ToolDiscoveryService> {
  return {
    async registerTools(request, context) {
      const owner = toolOwnerFor(principalOf(context));
      checkSize(LIMITS.registerToolsSource, request.source.length);
      // Narrower than the catalog's own source names: `mcp:…` and `catalog:…` belong to the server.
      if (!API_SOURCE.test(request.source))
        throw invalidArgument(
          `source ${quoteInput(request.source)} must use only letters, digits, '_', '.' and '-'`,
        );
      checkSize(LIMITS.registerToolsTools, request.tools.length);
      const inputs = request.tools.map((tool, i) => toolInputFromProto(tool, request.namespace, i));
      // Thousands of schemas take a while to check: in slices, so other calls go on meanwhile.
      refuseInvalidSchemas((await runInSlices(schemaViolations(inputs), () => true)) ?? []);
      // Compiling schemas is CPU work (done in slices, but it delays the answer): bound the whole call.
      checkSize(LIMITS.registerToolsCompiledSchemaNodes, compiledSchemaValues(inputs));
      const result = await tools.register(owner, request.source, inputs, request.replaceSource);
      sources?.apiRegistered(owner, request.source);
      return { ...result, catalogFingerprint: result.fingerprint };
    },

    listToolSources(_request, context) {
      const listing = sourceListingFor(principalOf(context));
      const visibleTools = listing.everything ? undefined : tools.visibilityFor(callerOf(context));
      return {
        sources: (sources?.list(listing.owners, visibleTools) ?? []).map((source) => ({
          name: source.name,
          tenantId: source.owner,
          kind: SOURCE_KINDS[source.kind],
          toolCount: source.toolCount,
          lastSyncTime: source.lastSyncTime ? timestampFromDate(source.lastSyncTime) : undefined,
          healthy: source.healthy,
          lastError: source.lastError,
        })),
      };
    },

    async listTenants(request, context) {
      authorizeTenantListing(principalOf(context));
      const pageSize = withinLimit(LIMITS.listTenantsPageSize, request.pageSize || undefined);
      const page = await tenantPage(tenants, pageSize, request.pageToken);
      return {
        tenants: page.tenants.map((tenant) => ({
          tenantId: tenant.id,
          seenIn: tenant.seenIn.map((origin) => TENANT_ORIGINS_PROTO[origin]),
        })),
        nextPageToken: page.nextPageToken,
      };
    },

    async listTools(request, context) {
      const result = await tools.list(callerOf(context), {
        pageSize: request.pageSize || undefined,
        pageToken: request.pageToken || undefined,
        showAll: request.showAllTools,
      });
      return {
        tools: result.tools.map((tool) => ({
          name: tool.name,
          description: firstSentence(tool.description),
          loadingMode: LOADING_MODES.toProto(tool.loadingMode),
          visible: tool.visible,
          source: tool.source,
          namespace: tool.namespace,
        })),
        nextPageToken: result.nextPageToken,
        totalCount: result.totalSize,
      };
    },

    async searchTools(request, context) {
      const result = await tools.search(callerOf(context), {
        query: request.query,
        type: SEARCH_TYPES.fromProto(request.searchType, "search_type"),
        limit: request.limit || undefined,
        minScore: request.minScore,
        includeAlwaysLoaded: request.includeAlwaysLoaded,
      });
      return {
        tools: result.tools.map((hit) => ({
          name: hit.name,
          description: hit.description,
          score: hit.score,
          lexicalScore: hit.lexicalScore,
          semanticScore: hit.semanticScore,
          learnedScore: hit.learnedScore,
          matchType: MATCH_TYPES[hit.matchType],
          loadingMode: LOADING_MODES.toProto(hit.loadingMode),
        })),
        totalDeferred: result.totalDeferred,
        ...searchReportToProto(result),
        searchId: result.searchId,
      };
    },

    async reportToolOutcome(request, context) {
      const report = outcomeReportOf(request, request.tool, {
        searchId: LIMITS.reportToolOutcomeSearchId,
        name: LIMITS.reportToolOutcomeTool,
        note: LIMITS.reportToolOutcomeNote,
        key: LIMITS.reportToolOutcomeKey,
      });
      return tools.reportOutcome(callerOf(context), { ...report, tool: report.name });
    },

    getTools(request, context) {
      checkSize(LIMITS.getToolsNames, request.names.length);
      const result = tools.get(callerOf(context), request.names);
      return {
        tools: result.tools.map((tool) =>
          toProtoTool(tool, { schemas: request.includeSchemas, examples: request.includeExamples }),
        ),
        notFound: [...result.notFound],
      };
    },

    async activateTools(request, context) {
      checkSize(LIMITS.activateToolsNames, request.names.length);
      const result = await tools.activate(
        callerOf(context),
        request.names,
        ACTIVATION_SCOPES.fromProto(request.scope, "scope"),
        request.reason || "explicit",
      );
      return {
        activated: [...result.activated],
        alreadyVisible: [...result.alreadyVisible],
        scope: ACTIVATION_SCOPES.toProto(result.scope),
      };
    },

    async deactivateTools(request, context) {
      const result = await tools.deactivate(
        callerOf(context),
        request.names,
        ACTIVATION_SCOPES.fromProto(request.scope, "scope"),
      );
      return { deactivated: [...result.deactivated], notActive: [...result.notActive] };
    },

    async resolveTool(request, context) {
      if (request.name === "") throw invalidArgument("name is required: the tool name the model called");
      const result = await tools.resolve(
        callerOf(context),
        request.name,
        ACTIVATION_SCOPES.fromProto(request.scope, "scope"),
      );
      return {
        tool: toProtoTool(result.tool, { schemas: true, examples: true }),
        activated: result.activated,
        scope: result.scope ? ACTIVATION_SCOPES.toProto(result.scope) : ActivationScope.UNSPECIFIED,
      };
    },

    async checkToolCall(request, context) {
      if (request.name === "") throw invalidArgument("name is required: the tool name the model called");
      const result = await tools.checkCall(
        callerOf(context),
        request.name,
        request.arguments ?? {},
        ACTIVATION_SCOPES.fromProto(request.scope, "scope"),
      );
      return {
        tool: toProtoTool(result.tool, { schemas: true, examples: true }),
        valid: result.problems.length === 0,
        problems: result.problems.map((problem) => ({ path: problem.path, message: problem.message })),
        repairMessage: result.problems.length === 0 ? "" : repairMessage(result.tool.name, result.problems),
        activated: result.activated,
        scope: result.scope ? ACTIVATION_SCOPES.toProto(result.scope) : ActivationScope.UNSPECIFIED,
      };
    },

    async callTool(request, context) {
      if (request.name === "") throw invalidArgument("name is required: the tool name the model called");
      checkSize(LIMITS.callToolTimeoutSeconds, request.timeoutSeconds);
      const called = await tools.call(
        callerOf(context),
        request.name,
        request.arguments ?? {},
        ACTIVATION_SCOPES.fromProto(request.scope, "scope"),
        {
          timeoutMs: request.timeoutSeconds === 0 ? undefined : request.timeoutSeconds * 1000,
          signal: context.signal,
          meta: traceContextFields(),
          session: context.values.get(SESSION_CALL),
        },
      );
      const { result } = called;
      return {
        tool: called.tool.name,
        source: called.tool.source,
        content: [...result.content],
        ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
        isError: result.isError,
        durationMs: called.durationMs,
      };
    },

    async renderToolPrompt(request, context) {
      const rendered = await tools.renderPrompt(callerOf(context), {
        includeDirectory: request.includeDirectory,
        directoryMaxEntries: withinLimit(
          LIMITS.directoryMaxEntries,
          request.directoryMaxEntries || undefined,
        ),
        hintMessage: request.hintMessage || undefined,
        hintLimit: withinLimit(LIMITS.hintLimit, request.hintLimit || undefined),
        maxExamplesPerTool: withinLimit(LIMITS.maxExamplesPerTool, request.maxExamplesPerTool),
        includeExampleDescriptions: request.includeExampleDescriptions,
        exampleFilterTags: request.exampleFilterTags.length > 0 ? request.exampleFilterTags : undefined,
        dispatch: request.dispatch,
      });
      return {
        text: rendered.text,
        tokenEstimate: rendered.tokenEstimate,
        fingerprint: rendered.fingerprint,
        visibleTools: [...rendered.visibleTools],
        deferredCount: rendered.deferredCount,
        hintedTools: [...rendered.hintedTools],
      };
    },

    renderToolPayload(request, context) {
      const payload = tools.renderPayload(callerOf(context), {
        provider: payloadProviderFromProto(request.provider),
        nativeSearch: request.nativeSearch,
        includeDiscoveryTools: request.includeDiscoveryTools,
        dispatch: request.dispatch,
      });
      return {
        payloadJson: payload.payloadJson,
        prefixHash: payload.prefixHash,
        breakpointIndex: payload.breakpointIndex,
        tokenEstimate: estimateTokens(payload.payloadJson),
        nameMappings: Object.entries(payload.toolNames)
          .filter(([providerName, toolName]) => providerName !== toolName)
          .map(([providerName, toolName]) => ({ providerName, toolName })),
      };
    },

    getDiscoveryTools(request) {
      return {
        tools: discoveryTools({
          includeSkillTools: request.includeSkillTools,
          includeDispatchTool: request.dispatch,
        }).map((tool) => ({
          name: tool.name,
          description: tool.description,
          argsSchema: tool.argsSchema,
          examples: tool.examples.map((example) => ({
            args: example.args,
            description: example.description,
          })),
          loadingMode: LoadingMode.ALWAYS,
          sideEffect: SideEffect.READ,
        })),
      };
    },

    watchToolEvents: (request, context) =>
      watchEvents(events, principalOf(context), request.filter, TOOL_EVENT_TYPES, callSignal(context)),
  };
}

function toolInputFromProto(tool: ProtoTool, namespace: string, index: number): ToolInput {
  const at = `tools[${index}]`;
  return {
    name: tool.name,
    namespace: tool.namespace || namespace || undefined,
    title: tool.title || undefined,
    description: tool.description,
    tags: tool.tags,
    sideEffects: SIDE_EFFECTS.fromProto(tool.sideEffect, `${at}.side_effect`),
    loadingMode: LOADING_MODES.fromProto(tool.loadingMode, `${at}.loading_mode`),
    argsSchema: tool.argsSchema as JsonObject | undefined,
    outputSchema: tool.outputSchema as JsonObject | undefined,
    examples: tool.examples.map((example) => ({
      args: (example.args ?? {}) as JsonObject,
      description: example.description,
      tags: example.tags,
    })),
    aliases: tool.aliases,
  };
}

function toProtoTool(tool: Tool, include: { schemas: boolean; examples: boolean }) {
  return {
    name: tool.name,
    namespace: tool.namespace,
    title: tool.title,
    description: tool.description,
    tags: [...tool.tags],
    sideEffect: SIDE_EFFECTS.toProto(tool.sideEffects),
    loadingMode: LOADING_MODES.toProto(tool.loadingMode),
    argsSchema: include.schemas ? tool.argsSchema : undefined,
    outputSchema: include.schemas && tool.outputSchema ? tool.outputSchema : undefined,
    examples: include.examples
      ? tool.examples.map((example) => ({
          args: example.args,
          description: example.description,
          tags: [...example.tags],
        }))
      : [],
    aliases: [...tool.aliases],
    source: tool.source,
    recordHash: tool.hash,
  };
}
