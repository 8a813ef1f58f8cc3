// Per-job GPU telemetry charts from GET /api/runs/ID/telemetry ({"jobs": [{job_id, key, gpus:
// [{index, uuid, samples: [{t, util, mem_util, mem_used_mib, ...}]}]}]}). A 404 or no samples
// shows "no telemetry".
import { useState } from "preact/hooks";
import { ApiError, get, type Job, type Telemetry, describe } from "./api";
import { type Series, TimeChart } from "./charts";
import { decimal, mib, percent } from "./format";
import { usePoll } from "./router";

type Key = "util" | "mem_used_mib" | "power_w" | "temp_c";
// Each chart's axis and legend values for people: memory as GiB/MiB, the rest with 3 digits.
const CHARTS: { key: Key; title: string; unit: string; format: (v: number) => string }[] = [
  { key: "util", title: "GPU utilization", unit: "%", format: percent },
  { key: "mem_used_mib", title: "Memory used", unit: "", format: mib },
  { key: "power_w", title: "Power", unit: "W", format: (v) => `${decimal(v)} W` },
  { key: "temp_c", title: "Temperature", unit: "°C", format: (v) => `${decimal(v)} °C` },
];

export function TelemetryView({ runId, finished, jobs }: { runId: number; finished: boolean; jobs: Job[] }) {
  const [data, setData] = useState<Telemetry | null | "none">(null);
  const [error, setError] = useState("");
  usePoll(
    async () => {
      try {
        setData(await get<Telemetry>(`/api/runs/${runId}/telemetry`));
        setError("");
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) setData("none");
        else setError(describe(e));
      }
    },
    5000,
    !finished,
    [runId],
  );
  if (error) return <p class="error">{error}</p>;
  if (data === null) return <p class="empty">Loading…</p>;
  const withSamples = data === "none" ? [] : (data.jobs ?? []).filter((j) => j.gpus.some((g) => g.samples.length > 0));
  if (withSamples.length === 0)
    return (
      <p class="empty" data-testid="no-telemetry">
        No telemetry: no job of this run has GPU samples.
      </p>
    );
  return (
    <div data-testid="telemetry">
      {withSamples.map((job) => {
        const name = jobs.find((j) => j.id === job.job_id)?.name ?? job.key;
        return (
          <div class="telemetry-job">
            <h3>{name}</h3>
            <div class="charts">
              {CHARTS.map(({ key, title, unit, format }) => {
                const series: Series[] = job.gpus
                  .filter((g) => g.samples.some((s) => s[key] !== null && s[key] !== undefined))
                  .map((g) => ({ label: `GPU ${g.index}`, points: g.samples.map((s) => [s.t, s[key] ?? null] as [number, number | null]) }));
                return series.length > 0 ? <TimeChart title={title} unit={unit} format={format} series={series} testid={`chart-${key}`} /> : null;
              })}
            </div>
          </div>
        );
      })}
    </div>
  );
}
