import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useRef, useState } from "preact/hooks";
import {
  type Event,
  type EventFilterSchema,
  EventSchema,
  type EventType,
  EventTypeSchema,
} from "../../../gen/ts/wayfind/v1/events_pb.ts";
import { type Api, callerAs } from "../api.ts";
import { clock, count, enumLabel } from "../format.ts";
import { batched, useResumingStream } from "../hooks.ts";
import type { PageProps } from "../page.ts";
import { Problem } from "../parts/problem.tsx";
import { VirtualList } from "../parts/virtual-list.tsx";

/** Events kept on the page; older ones scroll away for good (memory stays bounded at any rate). */
const KEPT = 10_000;
const ROW_HEIGHT = 28;
const REDRAW_MS = 100;

type Stream = "tools" | "skills" | "usage";
const STREAM_PREFIX: Record<Stream, string> = { tools: "TOOL_", skills: "SKILL_", usage: "USAGE_" };

/** The event types of one watch stream, by their enum names' prefix. */
function typesOf(stream: Stream): EventType[] {
  return EventTypeSchema.values
    .filter((value) => value.localName.startsWith(STREAM_PREFIX[stream]))
    .map((value) => value.number as EventType);
}

/** The watch streams, newest first, with filters, pause and resume from the last event seen. */
export function EventsPage({ session, tenant }: PageProps) {
  const [stream, setStream] = useState<Stream>("tools");
  const [types, setTypes] = useState<readonly EventType[]>([]);
  const [tool, setTool] = useState("");
  const [running, setRunning] = useState(true);
  const [events, setEvents] = useState<readonly Event[]>([]);
  const [received, setReceived] = useState(0);
  const batch = useRef<Event[]>([]);

  const state = useResumingStream(
    async (cursor, signal, live) => {
      const filter = {
        eventTypes: [...types],
        tool: stream === "tools" ? tool : "",
        afterId: cursor.value,
        fromOldest: cursor.value === 0n,
        tenantId: tenant,
      };
      // One redraw per REDRAW_MS, however many events arrived meanwhile: a list changing faster is
      // unreadable anyway, and the time between redraws keeps scrolling smooth at any event rate.
      const draw = batched(() => {
        const arrived = batch.current.reverse();
        batch.current = [];
        setReceived((n) => n + arrived.length);
        setEvents((shown) => [...arrived, ...shown].slice(0, KEPT));
      }, REDRAW_MS);
      for await (const message of watch(session.api, stream, { caller: callerAs(tenant), filter }, signal)) {
        live();
        if (message.case !== "event") continue;
        cursor.value = message.value.id;
        batch.current.push(message.value);
        draw();
      }
    },
    [stream, types.join(","), tool, tenant],
    running,
  );

  const change = (apply: () => void) => {
    apply();
    setEvents([]);
    setReceived(0);
  };
  return (
    <>
      <Problem text={state.problem} />
      <div class="toolbar">
        <label>
          Stream{" "}
          <select
            value={stream}
            onChange={(event) =>
              change(() => {
                setStream(event.currentTarget.value as Stream);
                setTypes([]);
              })
            }
          >
            <option value="tools">tools</option>
            <option value="skills">skills</option>
            <option value="usage">usage</option>
          </select>
        </label>
        <fieldset class="types">
          <legend>Types</legend>
          {typesOf(stream).map((type) => (
            <label key={type}>
              <input
                type="checkbox"
                checked={types.includes(type)}
                onChange={(event) => {
                  const on = event.currentTarget.checked;
                  change(() => setTypes((now) => (on ? [...now, type] : now.filter((t) => t !== type))));
                }}
              />{" "}
              {EventTypeSchema.value[type]?.localName.toLowerCase()}
            </label>
          ))}
        </fieldset>
        {stream === "tools" ? (
          <label>
            Tool{" "}
            <input
              value={tool}
              onChange={(event) => change(() => setTool(event.currentTarget.value.trim()))}
            />
          </label>
        ) : null}
        <button type="button" onClick={() => setRunning(!running)}>
          {running ? "Pause" : "Resume"}
        </button>
        <span class={`stream-state ${state.status}`} role="status">
          {state.status} · {count(received)} received
        </span>
      </div>
      <VirtualList
        items={events}
        rowHeight={ROW_HEIGHT}
        label="Events"
        keyOf={(event) => String(event.id)}
        render={(event) => (
          <span class="event" data-event-type={event.type}>
            <span class="event-id">{String(event.id)}</span>
            <span class="event-time">{clock(event.time ? timestampDate(event.time) : undefined)}</span>
            <span class="event-type">{event.type}</span>
            <span class="event-tenant">{event.tenantId || "–"}</span>
            <span class="event-what">{describe(event)}</span>
          </span>
        )}
      />
    </>
  );
}

interface WatchRequest {
  readonly caller: ReturnType<typeof callerAs>;
  readonly filter: MessageInitShape<typeof EventFilterSchema>;
}

/** The stream's messages (status or event), whichever service it is. */
async function* watch(api: Api, stream: Stream, request: WatchRequest, signal: AbortSignal) {
  const messages =
    stream === "tools"
      ? api.tools.watchToolEvents(request, { signal })
      : stream === "skills"
        ? api.skills.watchSkillEvents(request, { signal })
        : api.usage.watchUsageEvents(request, { signal });
  for await (const message of messages) yield message.message;
}

/** The payload messages of Event's `payload` oneof, by their field's name (`toolActivated`, …). */
const PAYLOADS = new Map(
  EventSchema.fields.flatMap((field) =>
    field.oneof?.name === "payload" && field.fieldKind === "message"
      ? [[field.localName, field.message]]
      : [],
  ),
);

/**
 * One line about what happened: the payload's fields as sent, enums by name (`scope=run
 * source=explicit`, not their numbers), empty ones left out.
 */
function describe(event: Event): string {
  const { payload } = event;
  const schema = payload.case === undefined ? undefined : PAYLOADS.get(payload.case);
  if (!schema || payload.value === undefined) return "";
  const values = payload.value as unknown as Record<string, unknown>;
  return schema.fields
    .flatMap((field) => {
      const value = values[field.localName];
      if (value === "" || value === undefined || (Array.isArray(value) && value.length === 0)) return [];
      const shown =
        field.fieldKind === "enum"
          ? enumLabel(field.enum, value as number)
          : field.fieldKind === "list" && field.listKind === "enum"
            ? (value as number[]).map((v) => enumLabel(field.enum, v)).join(",")
            : typeof value === "object"
              ? JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v))
              : String(value);
      return [`${field.localName}=${shown}`];
    })
    .join(" ");
}
