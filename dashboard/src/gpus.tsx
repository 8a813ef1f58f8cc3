// The GPU fleet (GET /api/gpus): each GPU's state (free, leased, busy, quarantined), what holds
// it or why it is unavailable, since when; utilization and other fields when the server sends
// them. Polled every 2 s.
import { useState } from "preact/hooks";
import { get, type Gpu, when, describe } from "./api";
import { usePoll } from "./router";

const KNOWN = new Set(["index", "state", "detail", "since"]);

function health(state: string): string {
  return state === "quarantined" ? "failed a health check" : "ok";
}

export function GpusPage() {
  const [gpus, setGpus] = useState<Gpu[] | null>(null);
  const [error, setError] = useState("");
  usePoll(
    async () => {
      try {
        setGpus((await get<{ gpus: Gpu[] }>("/api/gpus")).gpus);
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
  if (!gpus) return <p class="empty">Loading…</p>;
  const extra = [...new Set(gpus.flatMap((g) => Object.keys(g).filter((k) => !KNOWN.has(k))))];
  const counts = new Map<string, number>();
  for (const g of gpus) counts.set(g.state, (counts.get(g.state) ?? 0) + 1);
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
            {gpus.length} GPU{gpus.length === 1 ? "" : "s"}:{" "}
            {[...counts].map(([state, n]) => `${n} ${state}`).join(", ")}
          </p>
          <div class="gpu-grid" data-testid="gpus">
            {gpus.map((g) => (
              <div class={`gpu s-${g.state}`} data-testid="gpu-card" data-state={g.state}>
                <div class="gpu-index">GPU {g.index}</div>
                <div class="gpu-state">{g.state}</div>
                <dl>
                  <dt>Health</dt>
                  <dd>{health(g.state)}</dd>
                  <dt>{g.state === "leased" ? "Held by" : g.state === "free" ? "" : "Why"}</dt>
                  <dd data-testid="gpu-detail">{g.detail || (g.state === "free" ? "" : "—")}</dd>
                  {g.since ? (
                    <>
                      <dt>Since</dt>
                      <dd>{when(g.since)}</dd>
                    </>
                  ) : null}
                  {extra.map((k) =>
                    g[k] !== undefined && g[k] !== null ? (
                      <>
                        <dt>{k.replace(/_/g, " ")}</dt>
                        <dd>{typeof g[k] === "object" ? JSON.stringify(g[k]) : String(g[k])}</dd>
                      </>
                    ) : null,
                  )}
                </dl>
              </div>
            ))}
          </div>
        </>
      )}
    </section>
  );
}
