import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { MatchType, SearchType } from "../../../gen/ts/wayfind/v1/common_pb.ts";
import {
  SkillFormat,
  SkillOrigin,
  SkillScope,
  type SkillService as SkillServiceDesc,
  TaskType,
} from "../../../gen/ts/wayfind/v1/skills_pb.ts";
import { authorizeSkillPackScope } from "../../caller/authorize.ts";
import type { Caller } from "../../caller/caller.ts";
import { failedPrecondition, invalidArgument, quoteInput } from "../../errors.ts";
import type { EventLog } from "../../events/index.ts";
import type {
  DirectoryField,
  ScopeKind,
  SkillOrigin as SkillOriginName,
  SearchType as SkillSearchType,
  SkillService,
  SkillSummary,
  TaskType as TaskTypeName,
  ToolGate,
} from "../../skills/index.ts";
import { DIRECTORY_FIELDS } from "../../skills/index.ts";
import { callerOf, principalOf } from "../pipeline.ts";
import { EnumMap } from "./enums.ts";
import { SKILL_EVENT_TYPES, watchEvents } from "./watch.ts";

const TASK_TYPES = new EnumMap<TaskTypeName>([
  [TaskType.BROWSER, "browser"],
  [TaskType.API, "api"],
  [TaskType.CODE, "code"],
  [TaskType.DOMAIN, "domain"],
  [TaskType.UNKNOWN, "unknown"],
]);
const ORIGINS = new EnumMap<SkillOriginName>([
  [SkillOrigin.PACK, "pack"],
  [SkillOrigin.LEARNED, "learned"],
]);
const SCOPES = new EnumMap<ScopeKind>([
  [SkillScope.PROJECT, "project"],
  [SkillScope.TENANT, "tenant"],
  [SkillScope.GLOBAL, "global"],
]);
export const SEARCH_TYPES = new EnumMap<SkillSearchType>([
  [SearchType.FTS, "fts"],
  [SearchType.REGEX, "regex"],
  [SearchType.EXACT, "exact"],
]);
const SKILL_MATCH_TYPES: Readonly<Record<SkillSearchType, MatchType>> = {
  fts: MatchType.FTS,
  regex: MatchType.NAME_SUBSTRING,
  exact: MatchType.EXACT,
};

/** The tool names a caller may see, so skills never mention others (built by the tool side). */
export type ToolGateFor = (caller: Caller) => ToolGate | undefined;

export function skillService(
  skills: SkillService,
  events: EventLog,
  toolGateFor: ToolGateFor,
): ServiceImpl<typeof SkillServiceDesc> {
  const gate = (caller: Caller) => ({ toolGate: toolGateFor(caller) });
  return {
    loadSkillPack(request, context) {
      const caller = callerOf(context);
      const kind = SCOPES.fromProto(request.scope, "scope") ?? "project";
      authorizeSkillPackScope(principalOf(context), kind);
      if (kind !== "global" && caller.tenantId === "") {
        throw failedPrecondition(`a ${kind}-scoped pack needs caller.tenant_id`);
      }
      if (kind === "project" && caller.projectId === "") {
        throw failedPrecondition(
          "a project-scoped pack needs caller.project_id (or use SKILL_SCOPE_TENANT / GLOBAL)",
        );
      }
      const source = request.source;
      if (source.case === undefined)
        throw invalidArgument("give either path (a server folder) or files (inline)");
      const result = skills.loadSkillPack(
        {
          pack: request.packName,
          version: request.version || undefined,
          path: source.case === "path" ? source.value : undefined,
          files:
            source.case === "files"
              ? source.value.files.map(({ path, content }) => ({ path, content }))
              : undefined,
          scope: {
            kind,
            tenantId: kind === "global" ? "" : caller.tenantId,
            projectId: kind === "project" ? caller.projectId : "",
          },
          updateExistingPackSkills: request.updateExistingPackSkills,
        },
        caller,
      );
      return {
        loaded: result.loaded,
        updated: result.updated,
        unchanged: result.unchanged,
        skillCount: result.skillCount,
      };
    },

    searchSkills(request, context) {
      const caller = callerOf(context);
      if (request.searchType === SearchType.FUZZY) {
        throw invalidArgument(
          "search_type FUZZY is reported, not requested; use FTS (it widens to fuzzy itself)",
        );
      }
      const result = skills.searchSkills(
        caller,
        {
          query: request.query,
          type: SEARCH_TYPES.fromProto(request.searchType, "search_type"),
          taskType: TASK_TYPES.fromProto(request.taskType, "task_type"),
          limit: request.limit || undefined,
        },
        gate(caller),
      );
      return {
        skills: result.skills.map((hit) => ({
          ...summary(hit),
          score: hit.score,
          matchType: SKILL_MATCH_TYPES[hit.matchType],
        })),
        effectiveSearchType: SEARCH_TYPES.toProto(result.effectiveSearchType),
      };
    },

    getSkills(request, context) {
      const caller = callerOf(context);
      const format = request.format === SkillFormat.INJECTION ? "injection" : "raw";
      if (request.format > SkillFormat.INJECTION)
        throw invalidArgument(`format: unknown enum value ${request.format}`);
      const result = skills.getSkills(
        caller,
        { names: request.names, format, maxTokens: request.maxTokens || undefined },
        gate(caller),
      );
      return {
        skills: result.skills.map((skill) => ({
          id: skill.id,
          name: skill.name,
          title: skill.title,
          description: skill.description,
          trigger: skill.trigger,
          taskType: TASK_TYPES.toProto(skill.taskType),
          tags: [...skill.tags],
          steps: [...skill.steps],
          preconditions: [...skill.preconditions],
          failureModes: [...skill.failureModes],
          origin: ORIGINS.toProto(skill.origin),
          originRef: skill.originRef,
          contentHash: skill.contentHash,
          scope: SCOPES.toProto(skill.scope),
          createdAt: timestampFromMs(skill.stats.createdAtMs),
          updatedAt: timestampFromMs(skill.stats.updatedAtMs),
          lastUsedAt:
            skill.stats.lastUsedAtMs === null ? undefined : timestampFromMs(skill.stats.lastUsedAtMs),
          useCount: BigInt(skill.stats.useCount),
          extra: skill.extra as never,
        })),
        formattedContext: format === "injection" ? result.formattedContext : "",
        tokenEstimate: format === "injection" ? result.finalTokensEst : 0,
        notFound: [...result.notFound],
      };
    },

    listSkills(request, context) {
      const caller = callerOf(context);
      const result = skills.listSkills(
        caller,
        {
          pageSize: request.pageSize || undefined,
          pageToken: request.pageToken || undefined,
          taskType: TASK_TYPES.fromProto(request.taskType, "task_type"),
          origin: ORIGINS.fromProto(request.origin, "origin"),
          scope: SCOPES.fromProto(request.scope, "scope"),
        },
        gate(caller),
      );
      return {
        skills: result.skills.map((skill) => ({
          ...summary(skill),
          origin: ORIGINS.toProto(skill.origin),
          scope: SCOPES.toProto(skill.scope),
        })),
        nextPageToken: result.nextPageToken,
        totalCount: result.totalCount,
      };
    },

    getRelevantSkills(request, context) {
      const caller = callerOf(context);
      const result = skills.getRelevantSkills(
        caller,
        { task: request.task, topK: request.topK || undefined, maxTokens: request.maxTokens || undefined },
        gate(caller),
      );
      return {
        formattedContext: result.formattedContext,
        skillNames: result.skills.map((skill) => skill.name),
        rawTokenEstimate: result.rawTokensEst,
        tokenEstimate: result.finalTokensEst,
        wasCompressed: result.wasCompressed,
      };
    },

    renderSkillDirectory(request, context) {
      const caller = callerOf(context);
      for (const field of request.fields) {
        if (!(DIRECTORY_FIELDS as readonly string[]).includes(field)) {
          throw invalidArgument(
            `fields: unknown field ${quoteInput(field)}; use ${DIRECTORY_FIELDS.join(", ")}`,
          );
        }
      }
      const result = skills.renderSkillDirectory(
        caller,
        {
          maxEntries: request.maxEntries || undefined,
          fields: request.fields.length > 0 ? (request.fields as DirectoryField[]) : undefined,
        },
        gate(caller),
      );
      return { text: result.text, entryCount: result.entryCount, tokenEstimate: result.tokenEstimate };
    },

    watchSkillEvents: (request, context) =>
      watchEvents(events, principalOf(context), request.filter, SKILL_EVENT_TYPES, context.signal),
  };
}

/** A skill's line in search results and listings; the trigger says best when to use it. */
function summary(skill: SkillSummary) {
  return {
    name: skill.name,
    title: skill.title,
    description: skill.trigger,
    taskType: TASK_TYPES.toProto(skill.taskType),
  };
}
