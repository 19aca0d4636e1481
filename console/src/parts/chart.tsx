import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

interface ChartSeries {
  readonly label: string;
  readonly values: readonly number[];
  readonly color: string;
}

export interface ChartProps {
  readonly title: string;
  /** Unix seconds of each point, ascending. */
  readonly times: readonly number[];
  readonly series: readonly ChartSeries[];
  readonly kind?: "line" | "bars";
  /** How a value is written in the data table and the legend. */
  readonly format?: (value: number) => string;
  /** Whole numbers (counts): the value axis has whole-number ticks only. */
  readonly integer?: boolean;
  readonly height?: number;
}

const bars = uPlot.paths.bars?.({ size: [0.6, 64] });

/**
 * A time chart drawn by uPlot, with its figures also in a table (hidden from sight, read by screen
 * readers and tests): the chart's data, not a picture of it.
 */
/** Tick steps of a whole-number axis: never a fraction, which a count format would round to a repeat. */
const WHOLE_STEPS = [1, 2, 5]
  .flatMap((step) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9].map((p) => step * p))
  .sort((a, b) => a - b);

export function Chart({
  title,
  times,
  series,
  kind = "line",
  format = String,
  integer = false,
  height = 180,
}: ChartProps) {
  const holder = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data: uPlot.AlignedData = [times as number[], ...series.map((s) => s.values as number[])];
  const shape = `${kind}:${series.map((s) => s.label).join("|")}`;

  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    const chart = new uPlot(
      {
        width: Math.max(element.clientWidth, 240),
        height,
        series: [
          {},
          ...series.map((s) => ({
            label: s.label,
            stroke: s.color,
            fill: kind === "bars" ? s.color : `${s.color}22`,
            width: kind === "bars" ? 0 : 2,
            value: (_: uPlot, v: number | null) => (v === null ? "–" : format(v)),
            ...(kind === "bars" && bars ? { paths: bars } : {}),
          })),
        ],
        axes: [
          {},
          {
            values: (_: uPlot, ticks: number[]) => {
              const labels = ticks.map(format);
              // What the axis reads, for tests and screen readers' neighbours (the canvas is a picture).
              element.dataset.valueTicks = labels.join(" | ");
              return labels;
            },
            size: 64,
            ...(integer ? { incrs: WHOLE_STEPS } : {}),
          },
        ],
        scales: { y: { range: (_: uPlot, _min: number, max: number) => [0, Math.max(max, 1)] } },
      },
      data,
      element,
    );
    plot.current = chart;
    const resize = new ResizeObserver(() =>
      chart.setSize({ width: Math.max(element.clientWidth, 240), height }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
    // Rebuilt only when the series change shape; new figures go through setData below.
  }, [shape, height, integer]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return (
    <figure class="chart" data-chart={title}>
      <figcaption>{title}</figcaption>
      <div ref={holder} class="chart-canvas" aria-hidden="true" />
      <table class="visually-hidden">
        <caption>{title}</caption>
        <thead>
          <tr>
            <th scope="col">time</th>
            {series.map((s) => (
              <th scope="col" key={s.label}>
                {s.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {times.map((time, row) => (
            <tr key={time}>
              <th scope="row">{new Date(time * 1000).toISOString()}</th>
              {series.map((s) => (
                <td key={s.label} data-value={s.values[row]}>
                  {format(s.values[row] ?? 0)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
