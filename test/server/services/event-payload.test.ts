import { describe, expect, it } from "vitest";
import { EventType } from "../../../gen/ts/wayfind/v1/events_pb.ts";
import { EVENT_TYPES } from "../../../src/events/index.ts";
import { EVENT_TYPE_VALUES, toProtoEvent } from "../../../src/server/services/event-payload.ts";

// Issue 19: one payload message per event type, built from the stored attributes.
const camel = (type: string) => type.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

describe("typed event payloads", () => {
  it.each(EVENT_TYPES)("%s has its enum value and its payload message", (type) => {
    expect(EVENT_TYPE_VALUES[type]).not.toBe(EventType.UNSPECIFIED);
    const event = toProtoEvent({ id: 1n, timestampMs: 0, type, attributes: {} });
    expect(event.eventType).toBe(EVENT_TYPE_VALUES[type]);
    expect(event.payload.case).toBe(camel(type));
  });

  it("reads counts as whole numbers and closed value sets as enums", () => {
    const event = toProtoEvent({
      id: 2n,
      timestampMs: 0,
      type: "tool_activated",
      attributes: { tool: "github.create_issue", scope: "session", source: "lazy_group", reason: "triage" },
    });
    expect(event.payload.case === "toolActivated" && event.payload.value).toMatchObject({
      tool: "github.create_issue",
      scope: 2, // SCOPE_SESSION
      source: 3, // SOURCE_LAZY_GROUP
      reason: "triage",
    });
    const usage = toProtoEvent({
      id: 3n,
      timestampMs: 0,
      type: "usage_recorded",
      attributes: {
        record_id: 7,
        provider: "anthropic",
        model: "m",
        input_tokens: 1200.7,
        output_tokens: -3,
      },
    });
    expect(usage.payload.case === "usageRecorded" && usage.payload.value).toMatchObject({
      recordId: 7n,
      provider: 1,
      inputTokens: 1200n,
      outputTokens: 0n,
    });
    expect(usage.payload.case === "usageRecorded" && usage.payload.value.costUsd).toBeUndefined();
  });
});
