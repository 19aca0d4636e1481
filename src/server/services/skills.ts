import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { SkillService as SkillServiceDesc } from "../../../gen/ts/wayfind/v1/skills_pb.ts";
import {
  SEARCH_TYPES,
  SKILL_FORMATS,
  SKILL_MATCH_TYPES,
  SKILL_ORIGINS,
  SKILL_SCOPES,
  TASK_TYPES,
} from "../../api-enums/enums.ts";
import { authorizeSkillPackScope } from "../../caller/authorize.ts";
import type { Caller } from "../../caller/caller.ts";
import { failedPrecondition, notFound, quoteInput } from "../../errors.ts";
import type { EventLog } from "../../events/index.ts";
import { type Learning, unknownSearch } from "../../learning/index.ts";
import { LIMITS } from "../../limits.ts";
import type { SemanticEvidence, SemanticQuery } from "../../search/evidence.ts";
import type {
  DirectoryField,
  SkillLibrary,
  SkillSummary,
  SkillWordIndex,
  ToolGate,
} from "../../skills/index.ts";
import { callerOf, callSignal, principalOf } from "../pipeline.ts";
import { outcomeReportOf } from "./outcome-report.ts";
import { searchReportToProto } from "./search-report.ts";
import { SKILL_EVENT_TYPES, watchEvents } from "./watch.ts";

/** The tool names a caller may see, so skills never mention others (built by the tool side). */
export type ToolGateFor = (caller: Caller) => ToolGate | undefined;

export function skillService(
  skills: SkillLibrary,
  events: EventLog,
  toolGateFor: ToolGateFor,
  /** Semantic ranking (config `tool_search.semantic`) for full-text skill searches; absent = lexical only. */
  semantic?: {
    evidence(query: SemanticQuery<SkillWordIndex>): Promise<SemanticEvidence<SkillWordIndex>>;
  },
  /** Remembers retrievals so outcome reports may name them and teach, and ranks by what was learned. */
  learning?: Learning,
): ServiceImpl<typeof SkillServiceDesc> {
  const gate = (caller: Caller) => ({ toolGate: toolGateFor(caller) });
  /** What the caller's tenant learned of skills for `text`, read with its meaning when it was embedded. */
  const learnedSkills = async (
    caller: Caller,
    text: string,
    meaning: SemanticEvidence<SkillWordIndex> | undefined,
  ) => learning?.evidence(caller, text, meaning?.vectors ?? [], "skill");
  return {
    async loadSkillPack(request, context) {
      const caller = callerOf(context);
      const kind = SKILL_SCOPES.fromProto(request.scope, "scope") ?? "project";
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
      const result = await skills.loadSharedSkillPack(
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

    async searchSkills(request, context) {
      const caller = callerOf(context);
      await skills.ready();
      const type = SEARCH_TYPES.fromProto(request.searchType, "search_type");
      const fts = (type ?? "fts") === "fts";
      const input = {
        query: request.query,
        type,
        taskType: TASK_TYPES.fromProto(request.taskType, "task_type"),
        limit: request.limit || undefined,
        minScore: request.minScore,
      };
      const meaning =
        semantic && fts ? await semantic.evidence(skills.searchMeaning(caller, input)) : undefined;
      const learned = fts ? await learnedSkills(caller, request.query, meaning) : undefined;
      const result = skills.searchSkills(caller, input, { ...gate(caller), semantic: meaning, learned });
      return {
        skills: result.skills.map((hit) => ({
          ...summary(hit),
          score: hit.score,
          lexicalScore: hit.lexicalScore,
          semanticScore: hit.semanticScore,
          learnedScore: hit.learnedScore,
          matchType: SKILL_MATCH_TYPES[hit.matchType],
        })),
        effectiveSearchType: SEARCH_TYPES.toProto(result.effectiveSearchType),
        ...searchReportToProto(result),
        searchId:
          learning?.rememberSkills(
            caller,
            fts ? request.query : "",
            result.skills.map((hit) => hit.name),
          ) ?? "",
      };
    },

    async getSkills(request, context) {
      const caller = callerOf(context);
      const format = SKILL_FORMATS.fromProto(request.format, "format") ?? "raw";
      const result = await skills.getSkills(
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
      const caller = callerOf(context);
      const result = skills.listSkills(
        caller,
        {
          pageSize: request.pageSize || undefined,
          pageToken: request.pageToken || undefined,
          taskType: TASK_TYPES.fromProto(request.taskType, "task_type"),
          origin: SKILL_ORIGINS.fromProto(request.origin, "origin"),
          scope: SKILL_SCOPES.fromProto(request.scope, "scope"),
        },
        gate(caller),
      );
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
      const caller = callerOf(context);
      await skills.ready();
      const input = {
        task: request.task,
        topK: request.topK || undefined,
        maxTokens: request.maxTokens || undefined,
        minScore: request.minScore,
      };
      const meaning = semantic ? await semantic.evidence(skills.taskMeaning(caller, input)) : undefined;
      const learned = await learnedSkills(caller, request.task, meaning);
      const result = await skills.getRelevantSkills(caller, input, {
        ...gate(caller),
        semantic: meaning,
        learned,
      });
      return {
        formattedContext: result.formattedContext,
        skillNames: result.skills.map((skill) => skill.name),
        rawTokenEstimate: result.rawTokensEst,
        tokenEstimate: result.finalTokensEst,
        wasCompressed: result.wasCompressed,
        searchId:
          learning?.rememberSkills(
            caller,
            request.task,
            result.skills.map((skill) => skill.name),
          ) ?? "",
      };
    },

    async reportSkillOutcome(request, context) {
      const caller = callerOf(context);
      const report = outcomeReportOf(request, request.skill, {
        searchId: LIMITS.reportSkillOutcomeSearchId,
        name: LIMITS.reportSkillOutcomeSkill,
        note: LIMITS.reportSkillOutcomeNote,
        key: LIMITS.reportSkillOutcomeKey,
      });
      // A skill the caller cannot see is missing, as for every other skill read.
      const found = skills.searchSkills(
        caller,
        { query: report.name, type: "exact", limit: 1 },
        gate(caller),
      );
      if (found.skills.length === 0)
        throw notFound(`skill ${quoteInput(report.name)} not found; use skill_search to find skills`);
      if (!learning) return { duplicate: false, learned: false };
      const result = await learning.report(caller, { ...report, kind: "skill" });
      if (!result.known) throw unknownSearch(report.searchId);
      return { duplicate: result.duplicate, learned: result.learned };
    },

    renderSkillDirectory(request, context) {
      const caller = callerOf(context);
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
