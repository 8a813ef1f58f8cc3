// What a token holder can do from the dashboard, through the API that `kiln rerun`, `kiln cancel`
// and `kiln approve` use (docs/serve.md#api): re-run a run (all or failed jobs), cancel it,
// approve or cancel a trigger, download a run's artifacts. Without a token none of it is shown
// (the server would refuse it anyway: 401/403).
import { useState } from "preact/hooks";
import { ApiError, type Artifact, bytes, download, get, post, type Run, TERMINAL, token, type Trigger, when } from "./api";
import { usePoll } from "./router";

type Outcome = { ok: boolean; text: string; run?: number };

function Result({ outcome }: { outcome: Outcome | null }) {
  if (!outcome) return null;
  return (
    <span class={outcome.ok ? "action-ok" : "error"} data-testid="action-result" data-ok={String(outcome.ok)}>
      {outcome.text}
      {outcome.run !== undefined && (
        <>
          {" "}
          <a href={`/ui/runs/${outcome.run}`} data-testid="action-run-link">
            run #{outcome.run}
          </a>
        </>
      )}
    </span>
  );
}

const why = (e: unknown) => (e instanceof ApiError ? `${e.status}: ${e.message}` : String(e));

// Runs `act` once per click (the button is disabled meanwhile) and keeps what it said.
function useAction(): [boolean, Outcome | null, (act: () => Promise<Outcome>) => Promise<void>, (o: Outcome) => void] {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const run = async (act: () => Promise<Outcome>) => {
    setBusy(true);
    try {
      setOutcome(await act());
    } catch (e) {
      setOutcome({ ok: false, text: why(e) });
    } finally {
      setBusy(false);
    }
  };
  return [busy, outcome, run, setOutcome];
}

// Re-run (all / failed jobs) once the run ended, cancel while it runs. A re-run is a trigger:
// its run, once the queue started it, is linked.
export function RunActions({ run, onChange }: { run: Run; onChange: () => void }) {
  const [busy, outcome, act, setOutcome] = useAction();
  const [waiting, setWaiting] = useState<number | null>(null);
  usePoll(
    async () => {
      if (waiting === null) return;
      const trigger = await get<Trigger>(`/api/triggers/${waiting}`);
      if (trigger.run_ids.length > 0) {
        setWaiting(null);
        setOutcome({ ok: true, text: `Re-run started (trigger #${trigger.id}):`, run: trigger.run_ids[0] });
      } else if (trigger.status === "finished" || trigger.status === "failed" || trigger.status === "cancelled") {
        setWaiting(null);
        setOutcome({ ok: trigger.status === "finished", text: `Trigger #${trigger.id} ${trigger.status}: ${trigger.message}` });
      }
    },
    1000,
    waiting !== null,
    [waiting],
  );
  if (!token()) return null;
  const finished = TERMINAL.has(run.status);
  const rerun = (failedOnly: boolean) =>
    act(async () => {
      const answer = await post<{ trigger: number; attempt: number }>(`/api/runs/${run.id}/rerun`, { failed_only: failedOnly });
      setWaiting(answer.trigger);
      return { ok: true, text: `Re-run of ${failedOnly ? "the failed jobs" : "all jobs"} queued as trigger #${answer.trigger} (attempt ${answer.attempt})…` };
    });
  const cancel = () =>
    act(async () => {
      await post(`/api/runs/${run.id}/cancel`);
      onChange();
      return { ok: true, text: `Cancelling run #${run.id}…` };
    });
  return (
    <div class="actions" data-testid="run-actions">
      {finished ? (
        <>
          <button data-testid="rerun-all" disabled={busy} onClick={() => rerun(false)}>
            Re-run all jobs
          </button>
          {run.status !== "success" && (
            <button data-testid="rerun-failed" disabled={busy} onClick={() => rerun(true)}>
              Re-run failed jobs
            </button>
          )}
        </>
      ) : (
        <button data-testid="cancel-run" class="danger" disabled={busy} onClick={cancel}>
          Cancel run
        </button>
      )}
      <Result outcome={outcome} />
    </div>
  );
}

// A trigger that has no run yet: approve it (a fork's pull request by a stranger) or cancel it.
export function TriggerActions({ trigger, onChange }: { trigger: Trigger; onChange: () => void }) {
  const [busy, outcome, act] = useAction();
  if (!token()) return null;
  const call = (what: "approve" | "cancel") =>
    act(async () => {
      await post(`/api/triggers/${trigger.id}/${what}`);
      onChange();
      return { ok: true, text: what === "approve" ? "approved" : "cancelled" };
    });
  return (
    <span class="actions" data-testid="trigger-actions">
      {trigger.status === "waiting_approval" && (
        <button data-testid="approve-trigger" disabled={busy} onClick={() => call("approve")}>
          Approve
        </button>
      )}
      <button data-testid="cancel-trigger" class="danger" disabled={busy} onClick={() => call("cancel")}>
        Cancel
      </button>
      <Result outcome={outcome} />
    </span>
  );
}

// The run's artifacts (GET /api/runs/ID/artifacts, token), each downloaded as NAME.zip.
export function Artifacts({ run }: { run: Run }) {
  const [artifacts, setArtifacts] = useState<Artifact[] | null>(null);
  const [error, setError] = useState("");
  const [busy, outcome, act] = useAction();
  const finished = TERMINAL.has(run.status);
  usePoll(
    async () => {
      if (!token()) return;
      try {
        setArtifacts((await get<{ artifacts: Artifact[] }>(`/api/runs/${run.id}/artifacts`)).artifacts);
        setError("");
      } catch (e) {
        setError(why(e));
      }
    },
    3000,
    !finished,
    [run.id, finished],
  );
  if (!token()) return null;
  if (error) return <p class="error">Artifacts: {error}</p>;
  if (!artifacts || artifacts.length === 0) return null;
  const jobName = (id: number | null) => run.jobs?.find((j) => j.id === id)?.key ?? "";
  return (
    <section data-testid="artifacts">
      <h2>Artifacts</h2>
      <table class="list">
        <thead>
          <tr>
            <th>Name</th>
            <th>Job</th>
            <th>Size</th>
            <th>Files</th>
            <th>Expires</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {artifacts.map((a) => (
            <tr data-testid="artifact" data-name={a.name}>
              <td class="mono">{a.name}</td>
              <td>{jobName(a.job_id)}</td>
              <td>{bytes(a.size)}</td>
              <td>{a.files}</td>
              <td>{a.expires_at ? when(a.expires_at) : "—"}</td>
              <td>
                <button
                  data-testid="artifact-download"
                  disabled={busy}
                  onClick={() =>
                    act(async () => ({ ok: true, text: `${a.name}.zip: ${bytes(await download(a.url, `${a.name}.zip`))} downloaded` }))
                  }
                >
                  Download
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Result outcome={outcome} />
    </section>
  );
}
