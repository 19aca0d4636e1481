import { timestampMs, timestampNow } from "@bufbuild/protobuf/wkt";
import type { Event, EventFilter, WatchStatus } from "../../../gen/ts/wayfind/v1/events_pb.ts";
import { watchedTenant } from "../../caller/authorize.ts";
import type { Principal } from "../../caller/caller.ts";
import { quoteInput, WayfindError } from "../../errors.ts";
import type { EventGap, EventLog, EventType, StoredEvent } from "../../events/index.ts";
import { EVENT_TYPES } from "../../events/index.ts";
import { checkSize, LIMITS } from "../../limits.ts";
import { streamSendBudget } from "../transport/turn-budget.ts";
import { eventTypeOf, toProtoEvent } from "./event-payload.ts";

/** Every watch stream sends something at least this often, so idle proxies keep it open. */
const HEARTBEAT_MS = 15_000;

type WatchMessage =
  | {
      message: { case: "status"; value: Omit<WatchStatus, "$typeName"> };
      sentAt: ReturnType<typeof timestampNow>;
    }
  | { message: { case: "event"; value: Omit<Event, "$typeName"> }; sentAt: ReturnType<typeof timestampNow> }
  | { message: { case: undefined }; sentAt: ReturnType<typeof timestampNow> };

/**
 * The body of WatchToolEvents / WatchSkillEvents / WatchUsageEvents: validates the filter, confines
 * it to what the principal may observe (src/caller/authorize.ts), then streams a status, the retained events after the cursor, and live
 * events with heartbeats, until the client goes away or the server drains.
 */
export async function* watchEvents(
  log: EventLog,
  principal: Principal,
  filter: EventFilter | undefined,
  serviceTypes: readonly EventType[],
  signal: AbortSignal,
): AsyncGenerator<WatchMessage> {
  const types = validateTypes(requestedTypes(filter), serviceTypes);
  const tool = filter?.tool ?? "";
  checkSize(LIMITS.eventFilterTool, tool.length);
  const tenantId = watchedTenant(principal, filter?.tenantId ?? "");
  const afterId = filter?.afterId
    ? filter.afterId
    : filter?.since
      ? log.cursorAt(timestampMs(filter.since))
      : filter?.fromOldest
        ? 0n
        : undefined;
  if (afterId !== undefined && afterId > log.latestId) {
    throw new WayfindError(
      "invalid_argument",
      `filter.after_id ${afterId} is newer than the newest event (${log.latestId}); resume from an id you received`,
    );
  }

  const gaps: EventGap[] = [];
  const subscription = log.subscribe({
    types,
    tenantId,
    sessionId: filter?.sessionId || undefined,
    // Only the events about the tool asked for: those that name it (tool_activated).
    tool: tool || undefined,
    afterId,
    signal,
    onGap: (gap) => gaps.push(gap),
  });
  yield status(log.retentionFloor() + 1n, false);

  const iterator = subscription[Symbol.asyncIterator]();
  // One interval per stream. Waiting for "next event or heartbeat" makes a short-lived promise per wait:
  // racing a promise that lives until the next heartbeat would pile one reaction onto it per event.
  let heartbeatDue = false;
  let wake: (() => void) | undefined;
  const heartbeat = setInterval(() => {
    heartbeatDue = true;
    wake?.();
  }, HEARTBEAT_MS);
  heartbeat.unref();
  try {
    let next = iterator.next();
    while (!signal.aborted) {
      const woken = new Promise<undefined>((resolve) => {
        wake = () => resolve(undefined);
      });
      // Aborting ends the subscription, which settles `next` as done.
      const result = await Promise.race([next, woken]);
      wake = undefined;
      if (heartbeatDue) {
        heartbeatDue = false;
        yield { message: { case: undefined }, sentAt: timestampNow() };
      }
      if (result === undefined) continue;
      if (result.done) return;
      while (gaps.length > 0) {
        const gap = gaps.shift() as EventGap;
        yield status(gap.resumedAfterId + 1n, true);
      }
      // Paces Connect and gRPC-Web streams, which connect-node encodes after this yields; native gRPC
      // meters each encoding exactly (grpc-js-adapter.ts).
      const nextTurn = streamSendBudget.spent();
      if (nextTurn) await nextTurn;
      yield eventMessage(result.value);
      next = iterator.next();
    }
  } finally {
    clearInterval(heartbeat);
    await iterator.return?.();
  }
}

/**
 * The message of one event for every stream that sends it in the same turn of the event loop: one
 * object (its time the turn's), so it is converted once and the gRPC transport encodes it once
 * (grpc-js-adapter.ts), not once per watching stream.
 */
let sentThisTurn:
  | { sentAt: ReturnType<typeof timestampNow>; messages: WeakMap<StoredEvent, WatchMessage> }
  | undefined;

function eventMessage(event: StoredEvent): WatchMessage {
  if (sentThisTurn === undefined) {
    sentThisTurn = { sentAt: timestampNow(), messages: new WeakMap() };
    setImmediate(() => {
      sentThisTurn = undefined;
    });
  }
  let message = sentThisTurn.messages.get(event);
  if (message === undefined) {
    message = { message: { case: "event", value: toProtoEvent(event) }, sentAt: sentThisTurn.sentAt };
    sentThisTurn.messages.set(event, message);
  }
  return message;
}

function status(oldestRetainedId: bigint, eventsLost: boolean): WatchMessage {
  return { message: { case: "status", value: { oldestRetainedId, eventsLost } }, sentAt: timestampNow() };
}

/** The types a filter names, by name (`types`) and by enum (`event_types`). */
function requestedTypes(filter: EventFilter | undefined): string[] {
  const byEnum = (filter?.eventTypes ?? []).map((value) => {
    const type = eventTypeOf(value);
    if (type === undefined)
      throw new WayfindError("invalid_argument", `filter.event_types: ${value} is not an event type`);
    return type;
  });
  return [...new Set([...(filter?.types ?? []), ...byEnum])];
}

function validateTypes(requested: readonly string[], serviceTypes: readonly EventType[]): EventType[] {
  for (const type of requested) {
    if (!(EVENT_TYPES as readonly string[]).includes(type)) {
      throw new WayfindError("invalid_argument", `filter.types: unknown event type ${quoteInput(type)}`);
    }
    if (!(serviceTypes as readonly string[]).includes(type)) {
      throw new WayfindError(
        "invalid_argument",
        `filter.types: "${type}" is not streamed by this RPC; it streams ${serviceTypes.join(", ")}`,
      );
    }
  }
  return requested.length > 0 ? (requested as EventType[]) : [...serviceTypes];
}

export const TOOL_EVENT_TYPES = EVENT_TYPES.filter((type) => type.startsWith("tool_"));
export const SKILL_EVENT_TYPES = EVENT_TYPES.filter((type) => type.startsWith("skill"));
export const USAGE_EVENT_TYPES = EVENT_TYPES.filter((type) => type.startsWith("usage_"));
