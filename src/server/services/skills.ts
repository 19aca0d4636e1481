import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { SkillService as SkillServiceDesc } from "../../../gen/ts/wayfind/v1/skills_pb.ts";
import {
  MATCH_TYPES,
  SEARCH_TYPES,
  SKILL_FORMATS,
  SKILL_ORIGINS,
  SKILL_SCOPES,
  TASK_TYPES,
} from "../../api-enums/enums.ts";
import type { EventLog } from "../../events/index.ts";
import { LIMITS } from "../../limits.ts";
import type { SkillService } from "../../skill-service/index.ts";
import type { DirectoryField, SkillSummary } from "../../skills/index.ts";
import { callerOf, callSignal, principalOf } from "../pipeline.ts";
import { outcomeReportOf } from "./outcome-report.ts";
import { searchReportToProto } from "./search-report.ts";
import { SKILL_EVENT_TYPES, watchEvents } from "./watch.ts";

export function skillService(skills: SkillService, events: EventLog): ServiceImpl<typeof SkillServiceDesc> {
  return {
    async loadSkillPack(request, context) {
      const { source } = request;
      const result = await skills.loadPack(callerOf(context), principalOf(context), {
        pack: request.packName,
        version: request.version || undefined,
        path: source.case === "path" ? source.value : undefined,
        files:
          source.case === "files"
            ? source.value.files.map(({ path, content }) => ({ path, content }))
            : undefined,
        scope: SKILL_SCOPES.fromProto(request.scope, "scope") ?? "project",
        updateExistingPackSkills: request.updateExistingPackSkills,
      });
      return {
        loaded: result.loaded,
        updated: result.updated,
        unchanged: result.unchanged,
        skillCount: result.skillCount,
      };
    },

    async searchSkills(request, context) {
      const result = await skills.search(callerOf(context), {
        query: request.query,
        type: SEARCH_TYPES.fromProto(request.searchType, "search_type"),
        taskType: TASK_TYPES.fromProto(request.taskType, "task_type"),
        limit: request.limit || undefined,
        minScore: request.minScore,
      });
      return {
        skills: result.skills.map((hit) => ({
          ...summary(hit),
          score: hit.score,
          lexicalScore: hit.lexicalScore,
          semanticScore: hit.semanticScore,
          learnedScore: hit.learnedScore,
          matchType: MATCH_TYPES[hit.matchType],
        })),
        ...searchReportToProto(result),
        searchId: result.searchId,
      };
    },

    async getSkills(request, context) {
      const format = SKILL_FORMATS.fromProto(request.format, "format") ?? "raw";
      const result = await skills.get(callerOf(context), {
        names: request.names,
        format,
        maxTokens: request.maxTokens || undefined,
      });
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
          origin: SKILL_ORIGINS.toProto(skill.origin),
          originRef: skill.originRef,
          contentHash: skill.contentHash,
          scope: SKILL_SCOPES.toProto(skill.scope),
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
      const result = skills.list(callerOf(context), {
        pageSize: request.pageSize || undefined,
        pageToken: request.pageToken || undefined,
        taskType: TASK_TYPES.fromProto(request.taskType, "task_type"),
        origin: SKILL_ORIGINS.fromProto(request.origin, "origin"),
        scope: SKILL_SCOPES.fromProto(request.scope, "scope"),
      });
      return {
        skills: result.skills.map((skill) => ({
          ...summary(skill),
          origin: SKILL_ORIGINS.toProto(skill.origin),
          scope: SKILL_SCOPES.toProto(skill.scope),
        })),
        nextPageToken: result.nextPageToken,
        totalCount: result.totalCount,
      };
    },

    async getRelevantSkills(request, context) {
      const result = await skills.relevant(callerOf(context), {
        task: request.task,
        topK: request.topK || undefined,
        maxTokens: request.maxTokens || undefined,
        minScore: request.minScore,
      });
      return {
        formattedContext: result.formattedContext,
        skillNames: result.skills.map((skill) => skill.name),
        rawTokenEstimate: result.rawTokensEst,
        tokenEstimate: result.finalTokensEst,
        wasCompressed: result.wasCompressed,
        searchId: result.searchId,
      };
    },

    async reportSkillOutcome(request, context) {
      const report = outcomeReportOf(request, request.skill, {
        searchId: LIMITS.reportSkillOutcomeSearchId,
        name: LIMITS.reportSkillOutcomeSkill,
        note: LIMITS.reportSkillOutcomeNote,
        key: LIMITS.reportSkillOutcomeKey,
      });
      return skills.reportOutcome(callerOf(context), report);
    },

    renderSkillDirectory(request, context) {
      const result = skills.directory(callerOf(context), {
        maxEntries: request.maxEntries || undefined,
        fields: request.fields.length > 0 ? (request.fields as DirectoryField[]) : undefined,
      });
      return { text: result.text, entryCount: result.entryCount, tokenEstimate: result.tokenEstimate };
    },

    watchSkillEvents: (request, context) =>
      watchEvents(events, principalOf(context), request.filter, SKILL_EVENT_TYPES, callSignal(context)),
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
