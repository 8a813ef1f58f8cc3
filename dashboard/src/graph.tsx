// A run's job graph: jobs in columns by their depth in the needs graph, an edge from every job
// of a needed node to the job that needs it. Matrix instances of one node share a column.
import { duration, type Job } from "./api";

const W = 210;
const H = 48;
const GAP_X = 60;
const GAP_Y = 14;

export function JobGraph({ jobs, selected, onSelect, now }: { jobs: Job[]; selected: number | null; onSelect: (id: number) => void; now: number }) {
  const byNode = new Map<string, Job[]>();
  for (const job of jobs) {
    const node = job.node || job.key;
    byNode.set(node, [...(byNode.get(node) ?? []), job]);
  }
  const depth = new Map<string, number>();
  const depthOf = (node: string, seen: Set<string>): number => {
    if (depth.has(node)) return depth.get(node)!;
    if (seen.has(node)) return 0;
    seen.add(node);
    const needs = byNode.get(node)?.[0]?.needs ?? [];
    let d = 0;
    for (const need of needs) if (byNode.has(need)) d = Math.max(d, depthOf(need, seen) + 1);
    depth.set(node, d);
    return d;
  };
  for (const node of byNode.keys()) depthOf(node, new Set());
  const columns: Job[][] = [];
  for (const job of jobs) {
    const d = depth.get(job.node || job.key) ?? 0;
    (columns[d] ??= []).push(job);
  }
  const pos = new Map<number, { x: number; y: number }>();
  columns.forEach((column, c) =>
    column.forEach((job, r) => pos.set(job.id, { x: 8 + c * (W + GAP_X), y: 8 + r * (H + GAP_Y) })),
  );
  const width = 16 + columns.length * (W + GAP_X) - GAP_X;
  const height = 16 + Math.max(1, ...columns.map((c) => c?.length ?? 0)) * (H + GAP_Y) - GAP_Y;
  const edges: { from: number; to: number }[] = [];
  for (const job of jobs)
    for (const need of job.needs ?? [])
      for (const dep of byNode.get(need) ?? []) edges.push({ from: dep.id, to: job.id });

  return (
    <svg class="graph" data-testid="job-graph" width={width} height={height} viewBox={`0 0 ${width} ${height}`}>
      {edges.map(({ from, to }) => {
        const a = pos.get(from)!;
        const b = pos.get(to)!;
        const x1 = a.x + W;
        const y1 = a.y + H / 2;
        const x2 = b.x;
        const y2 = b.y + H / 2;
        const mid = (x1 + x2) / 2;
        return <path class="edge" data-testid="job-edge" d={`M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`} />;
      })}
      {jobs.map((job) => {
        const p = pos.get(job.id)!;
        const state = job.conclusion || job.status;
        const label = job.name || job.key;
        return (
          <g
            class={`job s-${state} ${selected === job.id ? "selected" : ""}`}
            data-testid="job-node"
            data-job={job.key}
            data-status={state}
            data-class={job.failure_class ?? ""}
            transform={`translate(${p.x},${p.y})`}
            onClick={() => onSelect(job.id)}
          >
            <rect width={W} height={H} rx="6" />
            <text x="12" y="20" class="name">
              {label.length > 26 ? `${label.slice(0, 25)}…` : label}
            </text>
            <text x="12" y="38" class="sub">
              {state}
              {job.failure_class && job.failure_class !== state ? ` · ${job.failure_class}` : ""}
              {job.started_at ? ` · ${duration(job.started_at, job.finished_at, now)}` : ""}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
