import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import { UsageGroupBy, type UsageTotals } from "../../../gen/ts/wayfind/v1/usage_pb.ts";
import { callerAs } from "../api.ts";
import { count, percent, usd, utcDayStart } from "../format.ts";
import { useCall } from "../hooks.ts";
import type { PageProps } from "../page.ts";
import { Chart } from "../parts/chart.tsx";
import { Figure } from "../parts/figure.tsx";
import { Problem } from "../parts/problem.tsx";

const RANGES = [
  { days: 1, label: "today" },
  { days: 7, label: "last 7 days" },
  { days: 30, label: "last 30 days" },
] as const;

/** Tokens by kind, cost and the prompt cache's hit rate per day, and cost by model, for a range. */
export function UsagePage({ session, tenant }: PageProps) {
  const [days, setDays] = useState<number>(7);
  const summary = useCall(
    async (signal) => {
      const window = { caller: callerAs(tenant), startTime: timestampFromDate(utcDayStart(days - 1)) };
      const [byDay, byModel] = await Promise.all([
        session.api.usage.getUsageSummary({ ...window, groupBy: UsageGroupBy.DAY }, { signal }),
        session.api.usage.getUsageSummary({ ...window, groupBy: UsageGroupBy.MODEL }, { signal }),
      ]);
      return { byDay, byModel };
    },
    [days, tenant],
  );

  const dayList = Array.from({ length: days }, (_, i) => utcDayStart(days - 1 - i));
  const perDay = new Map(summary.value?.byDay.groups.map((g) => [g.key, g.totals]) ?? []);
  const series = (pick: (t: UsageTotals) => number) =>
    dayList.map((day) => {
      const totals = perDay.get(day.toISOString().slice(0, 10));
      return totals ? pick(totals) : 0;
    });
  const times = dayList.map((day) => day.getTime() / 1000);
  const totals = summary.value?.byDay.totals;

  return (
    <>
      <Problem text={summary.problem} />
      <div class="toolbar">
        <label>
          Range{" "}
          <select value={days} onChange={(event) => setDays(Number(event.currentTarget.value))}>
            {RANGES.map((range) => (
              <option key={range.days} value={range.days}>
                {range.label}
              </option>
            ))}
          </select>
        </label>
        {tenant ? <span>tenant {tenant}</span> : null}
      </div>
      {totals && totals.calls === 0n ? <NoUsage session={session} tenant={tenant} days={days} /> : null}
      {totals ? (
        <section class="cards" aria-label="Totals">
          <Figure label="Cost" text={usd(totals.totalCostUsd)} />
          <Figure label="Saved by the prompt cache" text={usd(totals.savingsUsd)} />
          <Figure label="Cache hit rate" text={percent(totals.cacheHitRate)} />
          <Figure label="Model calls" text={count(totals.calls)} />
        </section>
      ) : null}
      <section class="charts">
        <Chart
          title="Tokens by kind"
          times={times}
          integer
          format={(v) => count(v)}
          series={[
            { label: "input", values: series((t) => Number(t.inputTokens)), color: "#2f6fdf" },
            { label: "output", values: series((t) => Number(t.outputTokens)), color: "#7048e8" },
            { label: "cache read", values: series((t) => Number(t.cacheReadInputTokens)), color: "#2b8a3e" },
            {
              label: "cache write",
              values: series((t) => Number(t.cacheCreationInputTokens)),
              color: "#e67700",
            },
          ]}
        />
        <Chart
          title="Cost per day"
          kind="bars"
          times={times}
          format={usd}
          series={[{ label: "cost", values: series((t) => t.totalCostUsd), color: "#c92a2a" }]}
        />
        <Chart
          title="Cache hit rate per day"
          times={times}
          format={percent}
          series={[{ label: "hit rate", values: series((t) => t.cacheHitRate), color: "#0b7285" }]}
        />
      </section>
      <table class="grid">
        <caption>Cost by model</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Calls</th>
            <th scope="col">Input</th>
            <th scope="col">Output</th>
            <th scope="col">Hit rate</th>
            <th scope="col">Cost</th>
          </tr>
        </thead>
        <tbody>
          {summary.value?.byModel.groups.map((group) => (
            <tr key={group.key} data-model={group.key}>
              <td>{group.key}</td>
              <td>{count(group.totals?.calls ?? 0n)}</td>
              <td>{count(group.totals?.inputTokens ?? 0n)}</td>
              <td>{count(group.totals?.outputTokens ?? 0n)}</td>
              <td>{percent(group.totals?.cacheHitRate ?? 0)}</td>
              <td data-cost>{usd(group.totals?.totalCostUsd ?? 0)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/** What an empty range means, and what to do about it. */
function NoUsage({ session, tenant, days }: PageProps & { days: number }) {
  const range = RANGES.find((r) => r.days === days)?.label ?? `the last ${days} days`;
  if (session.operator && tenant === "")
    return (
      <p class="hint" data-empty="usage">
        No usage without a tenant {range}. Usage belongs to the tenant that recorded it: pick one under “As
        tenant” above.
      </p>
    );
  return (
    <p class="hint" data-empty="usage">
      No usage recorded{tenant ? ` for tenant ${tenant}` : ""} {range}. Agents record each model call with
      UsageService.RecordUsage (the Go, Python and TypeScript examples do); it shows here at once.
    </p>
  );
}
