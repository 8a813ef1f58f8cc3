// The runs list: newest first, filtered by repository (on the server), status and branch; kept
// live by polling. Triggers that have no run yet (queued, waiting for approval) are listed above.
import { useState } from "preact/hooks";
import { TriggerActions } from "./actions";
import { branchOf, duration, get, type Run, token, type Trigger, when, describe } from "./api";
import { navigate, usePoll } from "./router";

const STATUSES = ["", "queued", "running", "success", "failure", "cancelled", "interrupted"];

export function StatusBadge({ status }: { status: string }) {
  return (
    <span class={`badge s-${status}`} data-status={status}>
      {status}
    </span>
  );
}

export function firstLine(text: string): string {
  const line = text.split("\n")[0];
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}

export function RunsPage({ query }: { query: URLSearchParams }) {
  const repository = query.get("repository") ?? "";
  const status = query.get("status") ?? "";
  const branch = query.get("branch") ?? "";
  const [runs, setRuns] = useState<Run[] | null>(null);
  const [triggers, setTriggers] = useState<Trigger[]>([]);
  const [repositories, setRepositories] = useState<string[]>([]);
  const [error, setError] = useState("");
  const [limit, setLimit] = useState(100);
  const [tick, setTick] = useState(0);

  usePoll(
    async () => {
      try {
        const params = new URLSearchParams({ limit: String(limit) });
        if (repository) params.set("repository", repository);
        const [r, t] = await Promise.all([
          get<{ runs: Run[] }>(`/api/runs?${params}`),
          get<{ triggers: Trigger[] }>("/api/triggers?limit=50"),
        ]);
        setRuns(r.runs);
        setTriggers(t.triggers.filter((x) => x.status === "queued" || x.status === "waiting_approval" || (x.status === "running" && x.run_ids.length === 0)));
        setRepositories((known) => {
          const all = new Set(known);
          for (const run of r.runs) all.add(run.repository);
          for (const trigger of t.triggers) all.add(trigger.repository);
          return [...all].sort();
        });
        setError("");
      } catch (e) {
        setError(describe(e));
      }
    },
    2000,
    true,
    [repository, limit, tick],
  );

  const setFilter = (key: string, value: string) => {
    const next = new URLSearchParams(query);
    if (value) next.set(key, value);
    else next.delete(key);
    const search = next.toString();
    navigate(`/ui/${search ? `?${search}` : ""}`, true);
  };

  const shown = (runs ?? []).filter(
    (run) => (!status || run.status === status) && (!branch || branchOf(run.ref).includes(branch)),
  );

  return (
    <section>
      <h1>Runs</h1>
      <div class="filters">
        <label>
          Repository
          <select data-testid="filter-repository" value={repository} onChange={(e) => setFilter("repository", e.currentTarget.value)}>
            <option value="">all</option>
            {[...new Set([...repositories, ...(repository ? [repository] : [])])].map((r) => (
              <option value={r}>{r}</option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select data-testid="filter-status" value={status} onChange={(e) => setFilter("status", e.currentTarget.value)}>
            {STATUSES.map((s) => (
              <option value={s}>{s || "any"}</option>
            ))}
          </select>
        </label>
        <label>
          Branch
          <input
            data-testid="filter-branch"
            value={branch}
            placeholder="main"
            onChange={(e) => setFilter("branch", e.currentTarget.value.trim())}
          />
        </label>
      </div>
      {error && <p class="error" data-testid="read-error">{error}</p>}
      {triggers.length > 0 && (
        <table class="list triggers" data-testid="triggers">
          <thead>
            <tr>
              <th>Trigger</th>
              <th>Status</th>
              <th>Repository</th>
              <th>Event</th>
              <th>Branch</th>
              <th>Commit</th>
              <th>By</th>
              <th>Received</th>
              <th>Why</th>
              {token() && <th />}
            </tr>
          </thead>
          <tbody>
            {triggers.map((t) => (
              <tr data-testid="trigger-row" data-trigger={t.id} data-status={t.status}>
                <td>#{t.id}</td>
                <td>
                  <StatusBadge status={t.status} />
                </td>
                <td>{t.repository}</td>
                <td>{t.event}</td>
                <td>{branchOf(t.ref)}</td>
                <td class="mono">{t.sha.slice(0, 8)}</td>
                <td>{t.sender}</td>
                <td>{when(t.created_at)}</td>
                <td class="muted">{t.message}</td>
                {token() && (
                  <td>
                    <TriggerActions trigger={t} onChange={() => setTick((n) => n + 1)} />
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {runs === null ? (
        !error && <p class="empty">Loading…</p>
      ) : shown.length === 0 ? (
        <p class="empty" data-testid="no-runs">
          No runs{repository || status || branch ? " match the filters" : " yet"}.
        </p>
      ) : (
        <table class="list" data-testid="runs">
          <thead>
            <tr>
              <th>Run</th>
              <th>Status</th>
              <th>Workflow</th>
              <th>Repository</th>
              <th>Branch</th>
              <th>Commit</th>
              <th>Event</th>
              <th>By</th>
              <th>Started</th>
              <th>Duration</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((run) => (
              <tr data-testid="run-row" data-run={run.id}>
                <td>
                  <a href={`/ui/runs/${run.id}`}>#{run.id}</a>
                </td>
                <td>
                  <StatusBadge status={run.status} />
                </td>
                <td>
                  <a href={`/ui/runs/${run.id}`}>{run.name || run.workflow}</a>
                  {run.attempt > 1 && <span class="muted"> attempt {run.attempt}</span>}
                  {run.commit?.message && <div class="muted commit-title">{firstLine(run.commit.message)}</div>}
                </td>
                <td>{run.repository}</td>
                <td>{branchOf(run.ref)}</td>
                <td class="mono">{run.sha.slice(0, 8)}</td>
                <td>{run.event}</td>
                <td>{run.trigger?.sender ?? ""}</td>
                <td>{when(run.started_at || run.created_at)}</td>
                <td>{duration(run.started_at, run.finished_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {runs !== null && runs.length >= limit && (
        <button onClick={() => setLimit(limit + 100)}>Show more</button>
      )}
    </section>
  );
}
