/** Event types of docs/design.md §5. */
export const EVENT_TYPES = [
  "tool_search_query",
  "tool_get",
  "tool_activated",
  "tool_activation_denied",
  "tool_search_cache_ready",
  "tool_policy_filtered",
  "tool_directory_rendered",
  "tool_hints_generated",
  "skill_pack_loaded",
  "skill_directory_rendered",
  "skills_retrieved",
  "skill_search_query",
  "skill_get",
  "skill_list",
  "usage_recorded",
  "tool_outcome_reported",
  "skill_outcome_reported",
  "tool_called",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export type EventAttributeValue = string | number | boolean;

/** What a domain module hands to the event log; the log assigns id and timestamp. */
export interface NewEvent {
  readonly type: EventType;
  readonly tenantId?: string;
  readonly sessionId?: string;
  readonly runId?: string;
  readonly attributes: Readonly<Record<string, EventAttributeValue>>;
}

export interface StoredEvent extends NewEvent {
  /** Monotonic, the resume cursor. */
  readonly id: bigint;
  /** Unix epoch milliseconds. */
  readonly timestampMs: number;
}

/** The one path through which domain modules emit events. */
export interface EventSink {
  /**
   * Emitted inside `writeTransaction` (src/database/transaction.ts), the event is committed with the change
   * it reports and delivered after the commit; emit state-change events there. Elsewhere it is written
   * in the next batch (a crash may lose it): fine for events that report no stored change.
   */
  emit(event: NewEvent): void;
}
