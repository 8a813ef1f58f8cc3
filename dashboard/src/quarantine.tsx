// Quarantined tests (GET /api/tests/quarantine, docs/failures.md "Quarantined tests"): each
// served repository's tests that still run and are reported but whose failures alone do not fail
// a job, why (the flip rule's count, or the reason given to `kiln tests quarantine`), since and
// until when. Polled every 5 s.
import { useState } from "preact/hooks";
import { get, type QuarantinedTest, when, describe } from "./api";
import { usePoll } from "./router";

export function QuarantinePage() {
  const [tests, setTests] = useState<QuarantinedTest[] | null>(null);
  const [error, setError] = useState("");
  usePoll(
    async () => {
      try {
        setTests((await get<{ quarantined: QuarantinedTest[] }>("/api/tests/quarantine")).quarantined);
        setError("");
      } catch (e) {
        setError(describe(e));
      }
    },
    5000,
    true,
    [],
  );
  if (error) return <p class="error">{error}</p>;
  if (!tests) return <p class="empty">Loading…</p>;
  return (
    <section>
      <h1>Quarantined tests</h1>
      <p class="muted">
        They still run and are reported; their failures alone do not fail a job. <span class="mono">kiln tests release NAME</span> ends a
        quarantine.
      </p>
      {tests.length === 0 ? (
        <p class="empty" data-testid="no-quarantined">
          No test is quarantined.
        </p>
      ) : (
        <table class="list" data-testid="quarantined">
          <thead>
            <tr>
              <th>Repository</th>
              <th>Test</th>
              <th>Why</th>
              <th>By</th>
              <th>Since</th>
              <th>Until</th>
            </tr>
          </thead>
          <tbody>
            {tests.map((t) => (
              <tr data-testid="quarantined-test" data-test={t.test}>
                <td>{t.repository}</td>
                <td class="mono">{t.test}</td>
                <td data-testid="quarantine-reason">{t.reason}</td>
                <td>{t.manual ? "hand" : "flips"}</td>
                <td>{when(t.since)}</td>
                <td data-testid="quarantine-expires">{when(t.expires_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
