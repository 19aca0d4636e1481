import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type Event,
  EventType as EventTypeEnum,
  SkillDirectoryRenderedSchema,
  SkillGetSchema,
  SkillListSchema,
  SkillOutcomeReportedSchema,
  SkillPackLoadedSchema,
  SkillSearchQuerySchema,
  SkillsRetrievedSchema,
  ToolActivated_Scope,
  ToolActivated_Source,
  ToolActivatedSchema,
  ToolActivationDeniedSchema,
  ToolCalledSchema,
  ToolDirectoryRenderedSchema,
  ToolGetSchema,
  ToolHintsGeneratedSchema,
  ToolOutcomeReportedSchema,
  ToolPolicyFilteredSchema,
  ToolSearchCacheReadySchema,
  ToolSearchQuerySchema,
  UsageRecordedSchema,
} from "../../../gen/ts/wayfind/v1/events_pb.ts";
import {
  EFFECTIVE_SEARCH_TYPES,
  OUTCOMES,
  PROVIDERS,
  SEMANTIC_STATUSES,
  SEMANTIC_TIERS,
} from "../../api-enums/enums.ts";
import { EVENT_TYPES, type EventType, type StoredEvent } from "../../events/index.ts";
import type { Outcome } from "../../learning/index.ts";
import type { Provider } from "../../usage/model.ts";

/** Each event type's enum value: `tool_activated` ↔ EVENT_TYPE_TOOL_ACTIVATED. */
export const EVENT_TYPE_VALUES = Object.fromEntries(
  EVENT_TYPES.map((type) => [type, EventTypeEnum[type.toUpperCase() as keyof typeof EventTypeEnum]]),
) as Readonly<Record<EventType, EventTypeEnum>>;

/** The event type an enum value names; undefined for UNSPECIFIED or an unknown value. */
export function eventTypeOf(value: EventTypeEnum): EventType | undefined {
  return EVENT_TYPES.find((type) => EVENT_TYPE_VALUES[type] === value);
}

type Attributes = StoredEvent["attributes"];

/**
 * A stored event as the API sends it: the typed payload message of its type, built from its stored
 * attributes (so events stored before the payloads existed read the same), and the attributes map
 * (deprecated) beside it.
 */
export function toProtoEvent(event: StoredEvent): Omit<Event, "$typeName"> {
  // Every watcher of an event gets the same message: built once, not once per stream.
  let message = converted.get(event);
  if (!message) {
    message = convert(event);
    converted.set(event, message);
  }
  return message;
}

const converted = new WeakMap<StoredEvent, Omit<Event, "$typeName">>();

function convert(event: StoredEvent): Omit<Event, "$typeName"> {
  return {
    id: event.id,
    time: timestampFromMs(event.timestampMs),
    type: event.type,
    eventType: EVENT_TYPE_VALUES[event.type],
    tenantId: event.tenantId ?? "",
    sessionId: event.sessionId ?? "",
    runId: event.runId ?? "",
    attributes: { ...event.attributes },
    payload: payloadOf(event.type, event.attributes),
  };
}

/** A count: a whole, non-negative number (anything else reads as 0). */
function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value)
    ? Math.min(2 ** 32 - 1, Math.max(0, Math.trunc(value)))
    : 0;
}

function bigCount(value: unknown): bigint {
  return typeof value === "number" && Number.isFinite(value) ? BigInt(Math.max(0, Math.trunc(value))) : 0n;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function searchType(value: unknown): number {
  return EFFECTIVE_SEARCH_TYPES[text(value) as keyof typeof EFFECTIVE_SEARCH_TYPES] ?? 0;
}

function semanticStatus(value: unknown): number {
  return SEMANTIC_STATUSES[text(value) as keyof typeof SEMANTIC_STATUSES] ?? 0;
}

function semanticTier(value: unknown): number {
  return SEMANTIC_TIERS[text(value) as keyof typeof SEMANTIC_TIERS] ?? 0;
}

const SCOPES: Readonly<Record<string, ToolActivated_Scope>> = {
  run: ToolActivated_Scope.RUN,
  session: ToolActivated_Scope.SESSION,
};
const SOURCES: Readonly<Record<string, ToolActivated_Source>> = {
  explicit: ToolActivated_Source.EXPLICIT,
  resolve: ToolActivated_Source.RESOLVE,
  lazy_group: ToolActivated_Source.LAZY_GROUP,
};

function payloadOf(type: EventType, a: Attributes): Event["payload"] {
  switch (type) {
    case "tool_search_query":
      return {
        case: "toolSearchQuery",
        value: create(ToolSearchQuerySchema, {
          query: text(a.query),
          requestedType: searchType(a.requested_type),
          strategy: text(a.strategy),
          resultCount: count(a.result_count),
          semanticStatus: semanticStatus(a.semantic_status),
          semanticTextsPending: count(a.semantic_texts_pending),
          semanticTier: semanticTier(a.semantic_tier),
        }),
      };
    case "tool_get":
      return {
        case: "toolGet",
        value: create(ToolGetSchema, {
          requestedCount: count(a.requested_count),
          returnedCount: count(a.returned_count),
        }),
      };
    case "tool_activated":
      return {
        case: "toolActivated",
        value: create(ToolActivatedSchema, {
          tool: text(a.tool),
          scope: SCOPES[text(a.scope)] ?? ToolActivated_Scope.UNSPECIFIED,
          source: SOURCES[text(a.source)] ?? ToolActivated_Source.UNSPECIFIED,
          reason: text(a.reason),
        }),
      };
    case "tool_activation_denied":
      return {
        case: "toolActivationDenied",
        value: create(ToolActivationDeniedSchema, { reason: text(a.reason), count: count(a.count) }),
      };
    case "tool_search_cache_ready":
      return {
        case: "toolSearchCacheReady",
        value: create(ToolSearchCacheReadySchema, { toolCount: count(a.tool_count) }),
      };
    case "tool_policy_filtered":
      return {
        case: "toolPolicyFiltered",
        value: create(ToolPolicyFilteredSchema, {
          removedCount: count(a.removed_count),
          registryCount: count(a.registry_count),
        }),
      };
    case "tool_directory_rendered":
      return {
        case: "toolDirectoryRendered",
        value: create(ToolDirectoryRenderedSchema, {
          entryCount: count(a.entries),
          deferredCount: count(a.deferred_count),
        }),
      };
    case "tool_hints_generated":
      return {
        case: "toolHintsGenerated",
        value: create(ToolHintsGeneratedSchema, { hintCount: count(a.count) }),
      };
    case "skill_pack_loaded":
      return {
        case: "skillPackLoaded",
        value: create(SkillPackLoadedSchema, {
          pack: text(a.pack),
          skillCount: count(a.skill_count),
          loadedCount: count(a.loaded_count),
          updatedCount: count(a.updated_count),
          unchangedCount: count(a.unchanged_count),
          removedCount: count(a.removed_count),
        }),
      };
    case "skill_directory_rendered":
      return {
        case: "skillDirectoryRendered",
        value: create(SkillDirectoryRenderedSchema, {
          entryCount: count(a.entry_count),
          totalVisible: count(a.total_visible),
          tokenEstimate: count(a.tokens_est),
        }),
      };
    case "skills_retrieved":
      return {
        case: "skillsRetrieved",
        value: create(SkillsRetrievedSchema, {
          skillCount: count(a.skill_count),
          topK: count(a.top_k),
          rawTokenEstimate: count(a.raw_tokens_est),
          finalTokenEstimate: count(a.final_tokens_est),
          wasCompressed: a.was_compressed === true,
          taskTypes: text(a.task_types) === "" ? [] : text(a.task_types).split(","),
        }),
      };
    case "skill_search_query":
      return {
        case: "skillSearchQuery",
        value: create(SkillSearchQuerySchema, {
          query: text(a.query),
          searchType: searchType(a.search_type),
          resultCount: count(a.result_count),
          semanticStatus: semanticStatus(a.semantic_status),
          semanticTextsPending: count(a.semantic_texts_pending),
          semanticTier: semanticTier(a.semantic_tier),
        }),
      };
    case "skill_get":
      return {
        case: "skillGet",
        value: create(SkillGetSchema, {
          requestedCount: count(a.requested_count),
          foundCount: count(a.found_count),
          format: text(a.format),
          rawTokenEstimate: count(a.raw_tokens_est),
          finalTokenEstimate: count(a.final_tokens_est),
          wasCompressed: a.was_compressed === true,
        }),
      };
    case "skill_list":
      return {
        case: "skillList",
        value: create(SkillListSchema, {
          resultCount: count(a.result_count),
          totalCount: count(a.total_count),
          pageSize: count(a.page_size),
        }),
      };
    case "usage_recorded":
      return {
        case: "usageRecorded",
        value: create(UsageRecordedSchema, {
          recordId: bigCount(a.record_id),
          provider: PROVIDERS.toProto(text(a.provider) as Provider),
          model: text(a.model),
          inputTokens: bigCount(a.input_tokens),
          outputTokens: bigCount(a.output_tokens),
          cacheReadInputTokens: bigCount(a.cache_read_input_tokens),
          cacheCreationInputTokens: bigCount(a.cache_creation_input_tokens),
          ...(typeof a.cost_usd === "number" ? { costUsd: a.cost_usd } : {}),
        }),
      };
    case "tool_outcome_reported":
      return {
        case: "toolOutcomeReported",
        value: create(ToolOutcomeReportedSchema, {
          tool: text(a.tool),
          outcome: OUTCOMES.toProto(text(a.outcome) as Outcome),
          searchId: text(a.search_id),
          learned: a.learned === true,
          note: text(a.note),
        }),
      };
    case "tool_called":
      return {
        case: "toolCalled",
        value: create(ToolCalledSchema, {
          tool: text(a.tool),
          source: text(a.source),
          durationMs: bigCount(a.duration_ms),
          outcome: text(a.outcome),
          resultBytes: bigCount(a.result_bytes),
        }),
      };
    case "skill_outcome_reported":
      return {
        case: "skillOutcomeReported",
        value: create(SkillOutcomeReportedSchema, {
          skill: text(a.skill),
          outcome: OUTCOMES.toProto(text(a.outcome) as Outcome),
          searchId: text(a.search_id),
          note: text(a.note),
          learned: a.learned === true,
        }),
      };
  }
}
