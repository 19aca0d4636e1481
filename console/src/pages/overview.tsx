import { timestampDate, timestampFromDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { useRef, useState } from "preact/hooks";
import { EventType } from "../../../gen/ts/wayfind/v1/events_pb.ts";
import { ToolSourceKind } from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { callerAs } from "../api.ts";
import { count, percent, usd, utcDayStart } from "../format.ts";
import { batched, useCall, useResumingStream } from "../hooks.ts";
import type { PageProps } from "../page.ts";
import { Chart } from "../parts/chart.tsx";
import { Figure } from "../parts/figure.tsx";
import { Problem } from "../parts/problem.tsx";

const MINUTES = 60;

/** Per minute of the last hour: searches, those that found nothing, and activations. */
interface Activity {
  searches: number[];
  zeroResults: number[];
  activations: number[];
  /** Unix seconds of the first minute. */
  start: number;
}

function emptyActivity(now = Date.now()): Activity {
  const start = Math.floor(now / 60_000) * 60 - (MINUTES - 1) * 60;
  return {
    searches: new Array(MINUTES).fill(0),
    zeroResults: new Array(MINUTES).fill(0),
    activations: new Array(MINUTES).fill(0),
    start,
  };
}

/** The catalog at a glance, its sources' health, today's cost and what agents did in the last hour. */
export function OverviewPage({ session, tenant }: PageProps) {
  const { api } = session;
  const caller = callerAs(tenant);
  const figures = useCall(
    async (signal) => {
      const [tools, skills, today] = await Promise.all([
        session.agent
          ? api.tools.listTools({ caller, pageSize: 1, showAllTools: true }, { signal })
          : undefined,
        session.agent ? api.skills.listSkills({ caller, pageSize: 1 }, { signal }) : undefined,
        session.observer
          ? api.usage.getUsageSummary({ caller, startTime: timestampFromDate(utcDayStart()) }, { signal })
          : undefined,
      ]);
      return { tools: tools?.totalCount, skills: skills?.totalCount, today: today?.totals };
    },
    [tenant],
  );
  const sources = useCall(
    (signal) =>
      session.observer
        ? api.tools.listToolSources({ caller }, { signal }).then((r) => r.sources)
        : Promise.resolve([]),
    [tenant],
  );

  const [activity, setActivity] = useState(emptyActivity);
  // Counted across reconnects; the chart shows a copy of it.
  const counts = useRef(emptyActivity());
  const stream = useResumingStream(
    async (cursor, signal, live) => {
      if (!session.observer) return;
      const filter = {
        eventTypes: [EventType.TOOL_SEARCH_QUERY, EventType.TOOL_ACTIVATED],
        afterId: cursor.value,
        // The last hour only, however many events are retained.
        ...(cursor.value === 0n ? { since: timestampFromMs(Date.now() - MINUTES * 60_000) } : {}),
        tenantId: tenant,
      };
      // Drawn at most every 250 ms: a replay of many events is one redraw, not thousands.
      const draw = batched(() => {
        counts.current = activityNow(counts.current);
        setActivity(activityNow(counts.current));
      }, 250);
      for await (const message of api.tools.watchToolEvents({ caller, filter }, { signal })) {
        live();
        if (message.message.case !== "event") continue;
        const event = message.message.value;
        cursor.value = event.id;
        record(counts.current, event.time ? timestampDate(event.time).getTime() : Date.now(), event.payload);
        draw();
      }
    },
    [tenant],
  );

  const totals = figures.value?.today;
  const times = activity.searches.map((_, minute) => activity.start + minute * 60);
  return (
    <>
      <Problem text={figures.problem ?? sources.problem ?? stream.problem} />
      {session.operator && tenant === "" ? (
        <p class="hint">
          Usage belongs to the tenant that recorded it: pick one under “As tenant” above to see its cost and
          model calls. Without one, the figures count only calls made without a tenant, while the charts show
          every tenant's searches and activations.
        </p>
      ) : null}
      <section class="cards" aria-label="Figures">
        {/* Each tile only where the credential's roles can fill it: an unanswerable one would wait forever. */}
        {session.agent ? (
          <>
            <Figure label="Tools" value={figures.value?.tools} />
            <Figure label="Skills" value={figures.value?.skills} />
          </>
        ) : null}
        {session.observer ? (
          <>
            <Figure label="Sources" value={sources.value?.length} />
            <Figure label="Cost today" text={totals ? usd(totals.totalCostUsd) : undefined} />
            <Figure
              label="Prompt-cache hit rate today"
              text={totals ? percent(totals.cacheHitRate) : undefined}
            />
            <Figure label="Model calls today" value={totals ? Number(totals.calls) : undefined} />
          </>
        ) : null}
      </section>
      {session.observer ? (
        <section class="charts">
          <Chart
            title="Searches per minute"
            kind="bars"
            integer
            times={times}
            series={[
              { label: "searches", values: activity.searches, color: "#2f6fdf" },
              { label: "zero results", values: activity.zeroResults, color: "#d9480f" },
            ]}
          />
          <Chart
            title="Activations per minute"
            kind="bars"
            integer
            times={times}
            series={[{ label: "activations", values: activity.activations, color: "#2b8a3e" }]}
          />
        </section>
      ) : null}
      {sources.value && sources.value.length > 0 ? (
        <table class="grid">
          <caption>Tool sources</caption>
          <thead>
            <tr>
              <th scope="col">Source</th>
              <th scope="col">Kind</th>
              <th scope="col">Tenant</th>
              <th scope="col">Tools</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {sources.value.map((source) => (
              <tr key={`${source.tenantId}/${source.name}`}>
                <td>{source.name}</td>
                <td>{sourceKind(source.kind)}</td>
                <td>{source.tenantId || "(global)"}</td>
                <td>{count(source.toolCount)}</td>
                <td class={source.healthy ? "ok" : "bad"}>
                  {source.healthy ? "healthy" : `failing: ${source.lastError}`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
}

/** A copy of `activity` whose hour ends now: minutes that left it dropped, new ones at 0. */
function activityNow(activity: Activity): Activity {
  const now = emptyActivity();
  const shift = (now.start - activity.start) / 60;
  return {
    start: now.start,
    searches: slide(activity.searches, shift),
    zeroResults: slide(activity.zeroResults, shift),
    activations: slide(activity.activations, shift),
  };
}

/** Counts one event into the minute it happened in (older than the window: not counted). */
function record(activity: Activity, atMs: number, payload: { case?: string; value?: unknown }): void {
  const minute = Math.floor((atMs / 1000 - activity.start) / 60);
  if (minute < 0 || minute >= MINUTES) return;
  if (payload.case === "toolSearchQuery") {
    activity.searches[minute] = (activity.searches[minute] ?? 0) + 1;
    if ((payload.value as { resultCount: number }).resultCount === 0)
      activity.zeroResults[minute] = (activity.zeroResults[minute] ?? 0) + 1;
  } else if (payload.case === "toolActivated")
    activity.activations[minute] = (activity.activations[minute] ?? 0) + 1;
}

function slide(values: readonly number[], shift: number): number[] {
  if (shift <= 0) return values.slice();
  return shift >= MINUTES
    ? new Array(MINUTES).fill(0)
    : [...values.slice(shift), ...new Array(shift).fill(0)];
}

function sourceKind(kind: ToolSourceKind): string {
  switch (kind) {
    case ToolSourceKind.CATALOG_FILE:
      return "catalog file";
    case ToolSourceKind.MCP_STDIO:
      return "MCP (stdio)";
    case ToolSourceKind.MCP_HTTP:
      return "MCP (HTTP)";
    case ToolSourceKind.API:
      return "API";
    default:
      return "unknown";
  }
}
