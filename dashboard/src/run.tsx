// One run: its jobs as a graph, and for the selected job its live log and GPU telemetry; the
// run's test results and benchmark trends come from its report (GET /api/runs/ID/report).
import { useRef, useState } from "preact/hooks";
import { ApiError, branchOf, duration, get, type Job, type Run, TERMINAL, token, when } from "./api";
import { JobGraph } from "./graph";
import { LogStore, LogView, useRunEvents } from "./logs";
import { Report, ReportBenchmarks, ReportTests } from "./report";
import { usePoll } from "./router";
import { StatusBadge } from "./runs";
import { TelemetryView } from "./telemetry";

type Tab = "logs" | "telemetry" | "tests" | "benchmarks";

// Why the selected job failed, and the line kiln read that from (docs/failures.md), above its
// log; readable without a token, like the job itself. Also shown for a green job whose
// quarantined tests failed (class test).
export function FailureClass({ job }: { job: Job }) {
  if (!job.failure_class) return null;
  return (
    <p class={`failure-class c-${job.failure_class}`} data-testid="failure-class" data-class={job.failure_class}>
      {job.name || job.key}: <span class="badge">class {job.failure_class}</span>{" "}
      <span class="mono" data-testid="failure-evidence">
        {job.failure_evidence}
      </span>
    </p>
  );
}

export function RunPage({ id }: { id: number }) {
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState("");
  const [selected, setSelected] = useState<number | null>(null);
  const [tab, setTab] = useState<Tab>("logs");
  const [report, setReport] = useState<Report | null>(null);
  const [now, setNow] = useState(Date.now());
  const logs = useRef(new LogStore()).current;
  const finished = run !== null && TERMINAL.has(run.status);

  const load = async () => {
    try {
      const r = await get<Run>(`/api/runs/${id}`);
      setRun(r);
      setNow(Date.now());
      setError("");
      const jobs = r.jobs ?? [];
      if (jobs.length > 0) setSelected((s) => s ?? (jobs.find((j) => j.status === "running") ?? jobs[0]).id);
      if (TERMINAL.has(r.status)) setReport(await get<Report>(`/api/runs/${id}/report`));
    } catch (e) {
      setError(e instanceof ApiError && e.status === 404 ? `There is no run ${id}.` : String(e));
    }
  };
  // Job statuses by polling (the stream carries the run's status and its lines).
  usePoll(load, 1500, !finished, [id]);
  const [streamState, version] = useRunEvents(id, logs, (status) => {
    setRun((r) => (r && r.status !== status ? { ...r, status } : r));
    if (TERMINAL.has(status)) load();
  });

  if (!run) return error ? <p class="error">{error}</p> : <p class="empty">Loading…</p>;
  const jobs = run.jobs ?? [];
  const job = jobs.find((j) => j.id === selected) ?? null;

  return (
    <section>
      <h1>
        <StatusBadge status={run.status} /> <span data-testid="run-title">{run.name || run.workflow}</span>{" "}
        <span class="muted">#{run.id}</span>
      </h1>
      <dl class="facts">
        <dt>Repository</dt>
        <dd>{run.repository}</dd>
        <dt>Branch</dt>
        <dd>{branchOf(run.ref)}</dd>
        <dt>Commit</dt>
        <dd class="mono">{run.sha.slice(0, 12)}</dd>
        <dt>Event</dt>
        <dd>{run.event}</dd>
        <dt>Workflow</dt>
        <dd class="mono">{run.workflow}</dd>
        <dt>Started</dt>
        <dd>{when(run.started_at || run.created_at)}</dd>
        <dt>Duration</dt>
        <dd data-testid="run-duration">{duration(run.started_at, run.finished_at, now)}</dd>
      </dl>
      {error && <p class="error">{error}</p>}
      <h2>Jobs</h2>
      {jobs.length === 0 ? (
        <p class="empty">No job has started yet.</p>
      ) : (
        <div class="graph-box">
          <JobGraph jobs={jobs} selected={selected} onSelect={setSelected} now={now} />
        </div>
      )}
      {job?.summary_html && (
        <section class="job-summary" data-testid="job-summary">
          <h2>Summary of {job.name || job.key}</h2>
          {/* Rendered and sanitised by the server (GET /api/runs/ID: summary_html). */}
          <div class="step-summary" dangerouslySetInnerHTML={{ __html: job.summary_html }} />
        </section>
      )}
      {job && <FailureClass job={job} />}
      <div class="tabs" role="tablist">
        {(["logs", "telemetry", "tests", "benchmarks"] as Tab[]).map((t) => (
          <button role="tab" data-testid={`tab-${t}`} class={tab === t ? "active" : ""} onClick={() => setTab(t)}>
            {t[0].toUpperCase() + t.slice(1)}
          </button>
        ))}
      </div>
      {tab === "logs" &&
        (!token() ? (
          <p class="empty" data-testid="logs-need-token">
            Logs need an API token (serve.api_tokens): use “set token” at the top right.
          </p>
        ) : streamState === "refused" ? (
          <p class="error" data-testid="logs-need-token">
            The server refused the token: set another with “set token”.
          </p>
        ) : streamState === "closed" ? (
          <p class="error" data-testid="logs-closed">
            Logs are closed on this server: it has no serve.api_tokens configured.
          </p>
        ) : job ? (
          <>
            <h3 data-testid="log-job">
              {job.name || job.key} <StatusBadge status={job.conclusion || job.status} />{" "}
              <span class="muted">{duration(job.started_at, job.finished_at, now)}</span>
            </h3>
            {job.message && <p class="muted">{job.message}</p>}
            <LogView job={job} logs={logs} version={version} state={streamState} />
          </>
        ) : (
          <p class="empty">Select a job.</p>
        ))}
      {tab === "telemetry" && <TelemetryView runId={id} finished={finished} jobs={jobs} />}
      {tab === "tests" && (report ? <ReportTests report={report} /> : <p class="empty">Test results appear when the run has finished.</p>)}
      {tab === "benchmarks" &&
        (report ? <ReportBenchmarks report={report} /> : <p class="empty">Benchmark results appear when the run has finished.</p>)}
    </section>
  );
}
