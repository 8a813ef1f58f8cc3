// Time-series charts with uPlot; a sparkline for short series (benchmark trends).
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

const COLOURS = ["#2f6fdf", "#d9480f", "#2b8a3e", "#9c36b5", "#e67700", "#0b7285", "#c2255c", "#5c940d"];

export interface Series {
  label: string;
  points: [number, number | null][]; // [time in ms, value]
}

// One chart: x is time (ms since the epoch), one line per series; series with different sample
// times are aligned by uPlot.join (gaps where a series has no sample).
// `format` writes a value for the y axis and the legend (format.ts), else uPlot's default.
export function TimeChart({
  title,
  unit,
  series,
  testid,
  format,
}: {
  title: string;
  unit: string;
  series: Series[];
  testid?: string;
  format?: (value: number) => string;
}) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!host.current || series.length === 0) return;
    const tables = series.map(
      (s) => [s.points.map((p) => p[0] / 1000), s.points.map((p) => p[1])] as uPlot.AlignedData,
    );
    const data = tables.length === 1 ? tables[0] : uPlot.join(tables);
    const width = Math.max(320, host.current.clientWidth || 600);
    const chart = new uPlot(
      {
        title,
        width,
        height: 200,
        scales: { x: { time: true } },
        axes: [{}, { label: unit, size: 70, ...(format ? { values: (_: uPlot, splits: number[]) => splits.map(format) } : {}) }],
        series: [
          {},
          ...series.map((s, i) => ({
            label: s.label,
            stroke: COLOURS[i % COLOURS.length],
            width: 1.5,
            spanGaps: true,
            ...(format ? { value: (_: uPlot, v: number | null) => (v === null ? "—" : format(v)) } : {}),
          })),
        ],
      },
      data,
      host.current,
    );
    return () => chart.destroy();
  }, [title, unit, series, format]);
  return <div class="chart" data-testid={testid} ref={host} />;
}

// A small line of a series' values, oldest first; the last point (this run's) is marked. labels:
// the values as the tooltip prints them (the report's history_text).
export function Sparkline({ values, labels, width = 160, height = 36 }: { values: number[]; labels: string[]; width?: number; height?: number }) {
  if (values.length === 0) return <span class="muted">—</span>;
  const min = Math.min(...values);
  const max = Math.max(...values);
  const span = max - min || 1;
  const x = (i: number) => (values.length === 1 ? width / 2 : 3 + (i * (width - 6)) / (values.length - 1));
  const y = (v: number) => height - 4 - ((v - min) / span) * (height - 8);
  const points = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  const last = values.length - 1;
  return (
    <svg class="sparkline" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img">
      <title>{labels.join(", ")}</title>
      <polyline points={points} fill="none" stroke="#2f6fdf" stroke-width="1.5" />
      <circle cx={x(last)} cy={y(values[last])} r="3" fill="#d9480f" />
    </svg>
  );
}
