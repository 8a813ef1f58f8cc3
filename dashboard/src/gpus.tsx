// The GPU fleet (GET /api/gpus, docs/serve.md#api): each GPU's model, memory, utilization,
// temperature and power (a live reading, else the holder job's newest stored sample), its state
// and holder (repository / workflow / job, a link to the run), and the topology: which GPUs share
// NVLink/xGMI, a PCIe switch, a host bridge or only the CPU interconnect. Polled every 2 s.
import { useState } from "preact/hooks";
import { get, type Gpu, type GpuFleet, when, describe } from "./api";
import { decimal, mib, percent } from "./format";
import { usePoll } from "./router";

// How the page names a connection kind (gpu.h LinkKind), best first.
const LINKS: Record<string, string> = {
  nvlink: "NVLink",
  xgmi: "xGMI",
  "pcie-switch": "PCIe switch",
  "pcie-host": "PCIe host bridge",
  numa: "same NUMA node",
  sys: "CPU interconnect", // across NUMA nodes, or a path the provider does not know
};

function health(state: string): string {
  return state === "quarantined" ? "failed a health check" : "ok";
}

function Holder({ gpu }: { gpu: Gpu }) {
  const h = gpu.holder;
  if (h)
    return (
      <a href={h.url} data-testid="gpu-holder">
        {h.repository} / {h.workflow}
        {h.job ? ` / ${h.job}` : ""} <span class="muted">#{h.run_number}</span>
      </a>
    );
  // A lease of another kiln process (kiln run in a checkout): its text is all there is.
  return <span data-testid="gpu-detail">{gpu.detail || "—"}</span>;
}

function MemoryBar({ used, total }: { used: number; total: number }) {
  const share = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  return (
    <div class="memory" data-testid="gpu-memory">
      <div class="bar">
        <div style={{ width: `${share}%` }} />
      </div>
      {mib(used)} of {mib(total)} <span class="muted">({percent(share)})</span>
    </div>
  );
}

function GpuCard({ gpu }: { gpu: Gpu }) {
  const t = gpu.telemetry;
  return (
    <div class={`gpu s-${gpu.state}`} data-testid="gpu-card" data-state={gpu.state}>
      <div class="gpu-index">GPU {gpu.index}</div>
      <div class="gpu-model" data-testid="gpu-model">
        {gpu.model || "unknown model"} <span class="muted">{gpu.arch}</span>
      </div>
      <div class="gpu-state">{gpu.state}</div>
      <dl>
        <dt>Memory</dt>
        <dd>
          <MemoryBar used={gpu.memory_used_mib} total={gpu.memory_total_mib} />
        </dd>
        <dt>Utilization</dt>
        <dd data-testid="gpu-util">{t && t.utilization_pct !== null ? percent(t.utilization_pct) : "—"}</dd>
        <dt>Temperature</dt>
        <dd data-testid="gpu-temp">{t && t.temperature_c !== null ? `${decimal(t.temperature_c)} °C` : "—"}</dd>
        <dt>Power</dt>
        <dd>{t && t.power_w !== null ? `${decimal(t.power_w)} W` : "—"}</dd>
        <dt>Health</dt>
        <dd>{health(gpu.state)}</dd>
        {gpu.state !== "free" || gpu.detail ? (
          <>
            <dt>{gpu.state === "leased" ? "Held by" : "Why"}</dt>
            <dd>
              <Holder gpu={gpu} />
            </dd>
          </>
        ) : null}
        {gpu.since ? (
          <>
            <dt>Since</dt>
            <dd>{when(gpu.since)}</dd>
          </>
        ) : null}
        <dt>PCI</dt>
        <dd class="muted">
          {gpu.pci_bus_id || "—"}
          {gpu.numa_node >= 0 ? ` · NUMA ${gpu.numa_node}` : ""}
        </dd>
      </dl>
      {t && (
        <p class="muted reading">
          {t.source === "live" ? "read" : "stored by the job"} {when(t.time)}
        </p>
      )}
    </div>
  );
}

function Topology({ fleet }: { fleet: GpuFleet }) {
  const { matrix, islands } = fleet.topology;
  const fabric = islands.filter((members) => members.length > 1);
  const label = (i: number) => `GPU ${i}`;
  return (
    <section data-testid="topology">
      <h2>Topology</h2>
      <p>
        {fabric.length === 0
          ? "No GPUs share a GPU fabric (NVLink or xGMI)."
          : fabric.map((members, n) => (
              <span data-testid="gpu-island">
                {n > 0 ? "; " : ""}
                {members.map(label).join(", ")} share {fleet.gpus[members[0]]?.vendor === "amd" ? "xGMI" : "NVLink"}
              </span>
            ))}
      </p>
      <table class="list topology" data-testid="topology-matrix">
        <thead>
          <tr>
            <th />
            {matrix.map((_, b) => (
              <th>{label(b)}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {matrix.map((row, a) => (
            <tr>
              <th>{label(a)}</th>
              {row.map((kind) => (
                <td class={kind ? `link-${kind}` : "self"}>{kind ? LINKS[kind] ?? kind : "·"}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function GpusPage() {
  const [fleet, setFleet] = useState<GpuFleet | null>(null);
  const [error, setError] = useState("");
  usePoll(
    async () => {
      try {
        setFleet(await get<GpuFleet>("/api/gpus"));
        setError("");
      } catch (e) {
        setError(describe(e));
      }
    },
    2000,
    true,
    [],
  );
  if (error) return <p class="error">{error}</p>;
  if (!fleet) return <p class="empty">Loading…</p>;
  const gpus = fleet.gpus;
  const counts = new Map<string, number>();
  for (const g of gpus) counts.set(g.state, (counts.get(g.state) ?? 0) + 1);
  const total = gpus.reduce((sum, g) => sum + g.memory_total_mib, 0);
  return (
    <section>
      <h1>GPU fleet</h1>
      {gpus.length === 0 ? (
        <p class="empty" data-testid="no-gpus">
          This host has no GPU (or none kiln can see).
        </p>
      ) : (
        <>
          <p data-testid="gpu-summary">
            {gpus.length} GPU{gpus.length === 1 ? "" : "s"} ({mib(total)} in all, {fleet.provider}):{" "}
            {[...counts].map(([state, n]) => `${n} ${state}`).join(", ")}
          </p>
          <div class="gpu-grid" data-testid="gpus">
            {gpus.map((g) => (
              <GpuCard gpu={g} />
            ))}
          </div>
          {gpus.length > 1 && <Topology fleet={fleet} />}
        </>
      )}
    </section>
  );
}
