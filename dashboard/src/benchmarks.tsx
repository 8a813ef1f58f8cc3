// Benchmark trends (GET /api/benchmarks, docs/serve.md#dashboard): each benchmark's history for a
// repository, one chart per series (metric, branch, testbed), oldest point first, the change
// points that perf/change_points.h found marked where the new level starts, with the step's size.
import { useState } from "preact/hooks";
import { get, type BenchmarkHistory, type BenchmarkSeries, type Run, describe, when } from "./api";
import { change, measure } from "./format";
import { navigate, usePoll } from "./router";

const W = 640;
const H = 220;
const PAD = { left: 78, right: 16, top: 14, bottom: 30 };

// A line of the series' values with its change points: a dashed line before the first point of
// each new level and the step's size above it; the y axis in the series' unit for people.
export function TrendChart({ series }: { series: BenchmarkSeries }) {
  const values = series.points.map((p) => p.value);
  if (values.length === 0) return <p class="muted">no points</p>;
  let min = Math.min(...values);
  let max = Math.max(...values);
  if (min === max) {
    min -= Math.abs(min) * 0.05 || 1;
    max += Math.abs(max) * 0.05 || 1;
  }
  const margin = (max - min) * 0.08;
  min -= margin;
  max += margin;
  const x = (i: number) => PAD.left + (values.length === 1 ? 0.5 : i / (values.length - 1)) * (W - PAD.left - PAD.right);
  const y = (v: number) => PAD.top + (1 - (v - min) / (max - min)) * (H - PAD.top - PAD.bottom);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => min + f * (max - min));
  const bad = (percent: number) => (series.direction === "bigger_is_better" ? percent < 0 : percent > 0);
  return (
    <svg class="trend" viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" data-testid="trend-chart">
      {ticks.map((v) => (
        <g>
          <line x1={PAD.left} x2={W - PAD.right} y1={y(v)} y2={y(v)} class="grid" />
          <text x={PAD.left - 6} y={y(v) + 4} class="axis" text-anchor="end">
            {measure(v, series.unit)}
          </text>
        </g>
      ))}
      <text x={PAD.left} y={H - 8} class="axis">
        {when(series.points[0].time)}
      </text>
      <text x={W - PAD.right} y={H - 8} class="axis" text-anchor="end">
        {when(series.points[series.points.length - 1].time)}
      </text>
      {series.change_points.map((c) => {
        const at = (x(c.index - 1) + x(c.index)) / 2;
        return (
          <g data-testid="change-point" class={bad(c.change_percent) ? "cp worse" : "cp better"}>
            <line x1={at} x2={at} y1={PAD.top} y2={H - PAD.bottom} />
            <text x={at + 4} y={PAD.top + 10}>
              {change(c.change_percent)} at {c.commit.slice(0, 7)}
            </text>
            <title>
              {c.before_text} → {c.after_text} ({change(c.change_percent)}, p = {c.p_value.toFixed(3)}) from {c.commit}
            </title>
          </g>
        );
      })}
      <polyline points={series.points.map((p, i) => `${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(" ")} class="line" />
      {series.points.map((p, i) => (
        <circle cx={x(i)} cy={y(p.value)} r="3" class="point">
          <title>
            {p.value_text} at {p.commit.slice(0, 10)} ({when(p.time)})
          </title>
        </circle>
      ))}
    </svg>
  );
}

function SeriesView({ history, series }: { history: BenchmarkHistory; series: BenchmarkSeries }) {
  const last = series.points[series.points.length - 1];
  return (
    <div class="trend-card" data-testid="trend" data-benchmark={history.benchmark}>
      <h3>
        {history.benchmark} <span class="muted">{series.metric !== "value" ? series.metric : ""}</span>
      </h3>
      <p class="muted">
        {series.branch || "any branch"} · {series.testbed || "no testbed"} · {series.direction === "bigger_is_better" ? "bigger" : "smaller"} is
        better · {series.points.length} point{series.points.length === 1 ? "" : "s"}, latest <b data-testid="trend-latest">{last?.value_text}</b>
      </p>
      <TrendChart series={series} />
      {series.change_points.length > 0 ? (
        <ul class="change-points">
          {series.change_points.map((c) => {
            const point = series.points[c.index];
            return (
              <li data-testid="change-point-row">
                {change(c.change_percent)}: {c.before_text} → {c.after_text} from commit <code>{c.commit.slice(0, 10)}</code>
                {point?.run_id ? (
                  <>
                    {" "}
                    (<a href={`/ui/runs/${point.run_id}`}>run</a>)
                  </>
                ) : null}{" "}
                <span class="muted">p = {c.p_value.toFixed(3)}</span>
              </li>
            );
          })}
        </ul>
      ) : (
        <p class="muted">No change point: the level held.</p>
      )}
    </div>
  );
}

export function BenchmarksPage({ query }: { query: URLSearchParams }) {
  const repository = query.get("repository") ?? "";
  const [data, setData] = useState<BenchmarkHistory[] | null>(null);
  const [repositories, setRepositories] = useState<string[]>([]);
  const [error, setError] = useState("");
  usePoll(
    async () => {
      try {
        const params = repository ? `?${new URLSearchParams({ repository })}` : "";
        const [benchmarks, runs] = await Promise.all([
          get<{ benchmarks: BenchmarkHistory[] }>(`/api/benchmarks${params}`),
          get<{ runs: Run[] }>("/api/runs?limit=200"),
        ]);
        setData(benchmarks.benchmarks);
        setRepositories([...new Set(runs.runs.map((r) => r.repository))].sort());
        setError("");
      } catch (e) {
        setError(describe(e));
      }
    },
    30000,
    true,
    [repository],
  );
  if (error) return <p class="error">{error}</p>;
  if (!data) return <p class="empty">Loading…</p>;
  const choose = (value: string) => navigate(value ? `/ui/benchmarks?${new URLSearchParams({ repository: value })}` : "/ui/benchmarks");
  return (
    <section>
      <h1>Benchmark trends</h1>
      <div class="filters">
        <label>
          Repository
          <select data-testid="bench-repository" value={repository} onChange={(e) => choose((e.target as HTMLSelectElement).value)}>
            <option value="">the served repositories</option>
            {[...new Set([...repositories, repository].filter(Boolean))].map((r) => (
              <option value={r}>{r}</option>
            ))}
          </select>
        </label>
      </div>
      {data.length === 0 ? (
        <p class="empty" data-testid="no-trends">
          No benchmark results stored{repository ? ` for ${repository}` : ""} (jobs add them through $KILN_BENCHMARKS, or kiln bench ingest).
        </p>
      ) : (
        <div class="trends">
          {data.map((history) => (
            <>
              {history.series.map((series) => (
                <SeriesView history={history} series={series} />
              ))}
            </>
          ))}
        </div>
      )}
    </section>
  );
}
