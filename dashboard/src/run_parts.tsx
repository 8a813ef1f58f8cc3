// Pieces of the run page (run.tsx): the run's facts (commit, actor, trigger, queue wait, times),
// its jobs grouped by workflow job (a matrix's instances under one heading), the selected job's
// steps with their states and durations, and the annotations of every job.
import { type Annotation, branchOf, duration, type Job, type Run, when } from "./api";
import { StatusBadge } from "./runs";

export const jobState = (job: Job) => job.conclusion || job.status;

// The step that failed the job: the first whose outcome or conclusion is a failure.
export function failingStep(job: Job): number | null {
  if (jobState(job) !== "failure") return null;
  const step = job.steps.find((s) => s.conclusion === "failure" || s.outcome === "failure");
  return step ? step.index : null;
}

export function stepName(job: Job, index: number | null): string {
  if (index === null) return "Set up and clean up";
  return job.steps.find((s) => s.index === index)?.name || `step ${index + 1}`;
}

export function RunFacts({ run, now }: { run: Run; now: number }) {
  const [title, ...rest] = (run.commit?.message ?? "").split("\n");
  const body = rest.join("\n").trim();
  // Time in the server's queue: from the trigger's arrival to the run's start.
  const waited = run.trigger && run.trigger.received_at && run.started_at ? duration(run.trigger.received_at, run.started_at) : "";
  return (
    <>
      {run.commit?.message && (
        <div class="commit" data-testid="commit-message">
          <strong>{title}</strong>
          {body && <pre class="commit-body">{body}</pre>}
        </div>
      )}
      <dl class="facts">
        <dt>Repository</dt>
        <dd>{run.repository}</dd>
        <dt>Branch</dt>
        <dd>{branchOf(run.ref)}</dd>
        <dt>Commit</dt>
        <dd class="mono" data-testid="run-sha">
          {run.sha.slice(0, 12)}
          {run.commit?.author ? <span class="muted"> by {run.commit.author}</span> : null}
        </dd>
        <dt>Event</dt>
        <dd data-testid="run-event">{run.event}</dd>
        {run.trigger && (
          <>
            <dt>Actor</dt>
            <dd data-testid="run-actor">{run.trigger.sender || "unknown"}</dd>
            <dt>Trigger</dt>
            <dd data-testid="run-trigger">
              #{run.trigger.id}, received {when(run.trigger.received_at)}
            </dd>
          </>
        )}
        {run.attempt > 1 && (
          <>
            <dt>Attempt</dt>
            <dd data-testid="run-attempt">
              {run.attempt}
              {run.rerun_of ? (
                <>
                  , a re-run of <a href={`/ui/runs/${run.rerun_of}`}>run #{run.rerun_of}</a>
                </>
              ) : null}
            </dd>
          </>
        )}
        <dt>Workflow</dt>
        <dd class="mono">{run.workflow}</dd>
        <dt>Created</dt>
        <dd>{when(run.created_at)}</dd>
        {waited && (
          <>
            <dt>Queued for</dt>
            <dd data-testid="run-queue-wait">{waited}</dd>
          </>
        )}
        <dt>Started</dt>
        <dd data-testid="run-started">{when(run.started_at)}</dd>
        <dt>Finished</dt>
        <dd data-testid="run-finished">{run.finished_at ? when(run.finished_at) : "—"}</dd>
        <dt>Duration</dt>
        <dd data-testid="run-duration">{duration(run.started_at, run.finished_at, now)}</dd>
      </dl>
    </>
  );
}

function matrixText(job: Job): string {
  if (!job.matrix || typeof job.matrix !== "object") return job.key;
  const values = Object.values(job.matrix).map((v) => (typeof v === "object" ? JSON.stringify(v) : String(v)));
  return values.length ? values.join(", ") : job.key;
}

// Jobs by their workflow job (node): a matrix is one group with a line per instance and a
// count of how its instances ended.
export function JobList({ jobs, selected, onSelect, now }: { jobs: Job[]; selected: number | null; onSelect: (id: number) => void; now: number }) {
  const groups = new Map<string, Job[]>();
  for (const job of jobs) {
    const node = job.node || job.key;
    groups.set(node, [...(groups.get(node) ?? []), job]);
  }
  return (
    <div class="job-list" data-testid="job-list">
      {[...groups.entries()].map(([node, members]) => {
        const counts = new Map<string, number>();
        for (const job of members) counts.set(jobState(job), (counts.get(jobState(job)) ?? 0) + 1);
        const matrix = members.length > 1 || members.some((j) => j.matrix);
        return (
          <div class={`job-group ${matrix ? "matrix" : ""}`} data-testid="job-group" data-node={node} data-count={members.length}>
            {matrix && (
              <div class="job-group-title">
                <strong>{node}</strong>{" "}
                <span class="muted" data-testid="job-group-counts">
                  {members.length} jobs: {[...counts.entries()].map(([state, n]) => `${n} ${state}`).join(", ")}
                </span>
              </div>
            )}
            {members.map((job) => (
              <button
                class={`job-row ${selected === job.id ? "selected" : ""}`}
                data-testid="job-row"
                data-job={job.key}
                data-status={jobState(job)}
                onClick={() => onSelect(job.id)}
              >
                <StatusBadge status={jobState(job)} /> <span>{matrix ? matrixText(job) : job.name || job.key}</span>{" "}
                <span class="muted">{duration(job.started_at, job.finished_at, now)}</span>
                {job.reused_from && <span class="muted"> (reused from run #{job.reused_from.run})</span>}
              </button>
            ))}
          </div>
        );
      })}
    </div>
  );
}

export function StepList({ job, now, onOpen }: { job: Job; now: number; onOpen: (index: number) => void }) {
  if (job.steps.length === 0) return null;
  const failing = failingStep(job);
  return (
    <table class="list steps" data-testid="steps">
      <thead>
        <tr>
          <th>Step</th>
          <th>State</th>
          <th>Started</th>
          <th>Duration</th>
        </tr>
      </thead>
      <tbody>
        {job.steps.map((step) => {
          const state = step.conclusion || step.status;
          return (
            <tr data-testid="step-row" data-step={step.index} data-status={state} class={failing === step.index ? "failing" : ""}>
              <td>
                <a
                  href={`#step-${job.id}-${step.index}`}
                  onClick={(e) => {
                    e.preventDefault();
                    onOpen(step.index);
                  }}
                >
                  {step.index + 1}. {step.name || `step ${step.index + 1}`}
                </a>
              </td>
              <td>
                <StatusBadge status={state} />
                {step.exit_code !== null && step.exit_code !== 0 && <span class="muted"> exit {step.exit_code}</span>}
                {step.outcome && step.conclusion && step.outcome !== step.conclusion && <span class="muted"> ({step.outcome}, continued)</span>}
              </td>
              <td>{when(step.started_at)}</td>
              <td data-testid="step-duration">{duration(step.started_at, step.finished_at, now)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function where(a: Annotation): string {
  if (!a.file) return "";
  let text = a.file;
  if (a.line) text += `:${a.line}`;
  if (a.line && a.column) text += `:${a.column}`;
  if (a.end_line && a.end_line !== a.line) text += `-${a.end_line}`;
  return text;
}

// Every job's annotations, errors first; a click selects the job.
export function Annotations({ jobs, onSelect }: { jobs: Job[]; onSelect: (id: number) => void }) {
  const rank: Record<string, number> = { error: 0, warning: 1, notice: 2 };
  const all = jobs
    .flatMap((job) => (job.annotations ?? []).map((a) => ({ job, a })))
    .sort((x, y) => (rank[x.a.level] ?? 3) - (rank[y.a.level] ?? 3));
  if (all.length === 0) return null;
  return (
    <section data-testid="annotations">
      <h2>Annotations</h2>
      <ul class="annotations">
        {all.map(({ job, a }) => (
          <li class={`annotation lvl-${a.level}`} data-testid="annotation" data-level={a.level} data-file={a.file} data-line={a.line || ""}>
            <span class="badge">{a.level}</span>{" "}
            {a.file && <span class="mono" data-testid="annotation-where">{where(a)}</span>} {a.title && <strong>{a.title}: </strong>}
            <span data-testid="annotation-message">{a.message}</span>{" "}
            <a
              href="#"
              class="muted"
              onClick={(e) => {
                e.preventDefault();
                onSelect(job.id);
              }}
            >
              {job.name || job.key} · {stepName(job, a.step)}
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}
