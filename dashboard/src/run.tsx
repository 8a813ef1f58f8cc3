// One run: its facts and actions, its jobs as a graph and grouped by workflow job, the
// annotations, and for the selected job its steps, live log and GPU telemetry; the run's test
// results and benchmark trends come from its report (GET /api/runs/ID/report).
import { useEffect, useRef, useState } from "preact/hooks";
import { Artifacts, RunActions } from "./actions";
import { ApiError, describe, duration, get, type Job, type Run, TERMINAL, token, when } from "./api";
import { JobGraph } from "./graph";
import { LogStore, LogView, useRunEvents } from "./logs";
import { Report, ReportBenchmarks, ReportTests } from "./report";
import { usePoll } from "./router";
import { Annotations, failingStep, JobList, RunFacts, StepList } from "./run_parts";
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
  const [focus, setFocus] = useState<{ step: number; n: number } | null>(null);
  const logs = useRef(new LogStore()).current;
  const finished = run !== null && TERMINAL.has(run.status);
  // Durations of what still runs tick every second.
  useEffect(() => {
    if (finished) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [finished]);

  const load = async () => {
    try {
      const r = await get<Run>(`/api/runs/${id}`);
      setRun(r);
      setNow(Date.now());
      setError("");
      const jobs = r.jobs ?? [];
      // The running job, else the first failed one, else the first.
      if (jobs.length > 0)
        setSelected((s) => s ?? (jobs.find((j) => j.status === "running") ?? jobs.find((j) => failingStep(j) !== null) ?? jobs[0]).id);
      if (TERMINAL.has(r.status)) setReport(await get<Report>(`/api/runs/${id}/report`));
    } catch (e) {
      setError(e instanceof ApiError && e.status === 404 ? `There is no run ${id}.` : describe(e));
    }
  };
  // Job statuses by polling (the stream carries the run's status and its lines).
  usePoll(load, 1500, !finished, [id]);
  const [streamState, version] = useRunEvents(id, logs, (status) => {
    setRun((r) => (r && r.status !== status ? { ...r, status } : r));
    if (TERMINAL.has(status)) load();
  });

  if (!run) return error ? <p class="error" data-testid="read-error">{error}</p> : <p class="empty">Loading…</p>;
  const jobs = run.jobs ?? [];
  const job = jobs.find((j) => j.id === selected) ?? null;
  const select = (id: number) => {
    setSelected(id);
    setFocus(null);
  };

  return (
    <section>
      <h1>
        <StatusBadge status={run.status} /> <span data-testid="run-title">{run.name || run.workflow}</span>{" "}
        <span class="muted">#{run.id}</span>
      </h1>
      <RunFacts run={run} now={now} />
      <RunActions run={run} onChange={load} />
      {error && <p class="error">{error}</p>}
      <h2>Jobs</h2>
      {jobs.length === 0 ? (
        <p class="empty">No job has started yet.</p>
      ) : (
        <div class="jobs-view">
          <JobList jobs={jobs} selected={selected} onSelect={select} now={now} />
          <div class="graph-box">
            <JobGraph jobs={jobs} selected={selected} onSelect={select} now={now} />
          </div>
        </div>
      )}
      <Annotations jobs={jobs} onSelect={select} />
      <Artifacts run={run} />
      {job?.summary_html && (
        <section class="job-summary" data-testid="job-summary">
          <h2>Summary of {job.name || job.key}</h2>
          {/* Rendered and sanitised by the server (GET /api/runs/ID: summary_html). */}
          <div class="step-summary" dangerouslySetInnerHTML={{ __html: job.summary_html }} />
        </section>
      )}
      {job && <FailureClass job={job} />}
      {job && (
        <section class="job-panel" data-testid="job-panel">
          <h2>
            {job.name || job.key} <StatusBadge status={job.conclusion || job.status} />
          </h2>
          <p class="muted" data-testid="job-times">
            {job.started_at ? `started ${when(job.started_at)}` : "not started"}
            {job.finished_at ? `, finished ${when(job.finished_at)}` : ""}
            {job.started_at ? ` · ${duration(job.started_at, job.finished_at, now)}` : ""}
            {job.labels.length > 0 ? ` · runs-on ${job.labels.join(", ")}` : ""}
          </p>
          <StepList job={job} now={now} onOpen={(step) => setFocus({ step, n: (focus?.n ?? 0) + 1 })} />
        </section>
      )}
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
            <LogView key={job.id} job={job} logs={logs} version={version} state={streamState} now={now} focus={focus} />
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
