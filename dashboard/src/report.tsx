// A finished run's test results and benchmark trends, from its report document (the JSON of
// `kiln report RUN --format json`, served at GET /api/runs/ID/report; docs/reports.md).
import { Sparkline } from "./charts";

interface Totals {
  total: number;
  passed: number;
  failed: number;
  errors: number;
  skipped: number;
  flaky: number;
  seconds: number;
}

export interface Report {
  jobs: { id: number; key: string; name: string; tests: Totals }[];
  tests: Totals & {
    failures: { job: string; test: string; status: string; message: string; details: string; file: string }[];
    slowest: { job: string; test: string; seconds: number; status: string }[];
    flaky_tests: { job: string; test: string }[];
  };
  benchmarks: {
    job: string;
    benchmark: string;
    metric: string;
    value: number;
    unit: string;
    value_text: string; // the value for a reader, unit kept (report::format_number)
    direction: string;
    branch: string;
    testbed: string;
    history: number[];
    history_text: string[]; // history as the tooltip prints it
  }[];
}

export function ReportTests({ report }: { report: Report }) {
  const t = report.tests;
  if (t.total === 0) return <p class="empty" data-testid="no-tests">This run stored no test results (JUnit XML).</p>;
  return (
    <div data-testid="tests">
      <p class="totals">
        <b>{t.total}</b> tests: <span class="ok">{t.passed} passed</span>, <span class="bad">{t.failed} failed</span>, {t.errors} errors,{" "}
        {t.skipped} skipped{t.flaky ? `, ${t.flaky} flaky` : ""} · {t.seconds.toFixed(1)}s
      </p>
      <table class="list">
        <thead>
          <tr>
            <th>Job</th>
            <th>Total</th>
            <th>Passed</th>
            <th>Failed</th>
            <th>Errors</th>
            <th>Skipped</th>
          </tr>
        </thead>
        <tbody>
          {report.jobs
            .filter((j) => j.tests.total > 0)
            .map((j) => (
              <tr>
                <td>{j.name}</td>
                <td>{j.tests.total}</td>
                <td>{j.tests.passed}</td>
                <td>{j.tests.failed}</td>
                <td>{j.tests.errors}</td>
                <td>{j.tests.skipped}</td>
              </tr>
            ))}
        </tbody>
      </table>
      {t.failures.length > 0 && (
        <>
          <h3>Failures</h3>
          {t.failures.map((f) => (
            <details class="failure" data-testid="test-failure">
              <summary>
                <span class="bad">{f.status}</span> {f.test} <span class="muted">({f.job})</span> {f.message && <>— {f.message}</>}
              </summary>
              <pre>{f.details || f.message}</pre>
              {f.file && <p class="muted">{f.file}</p>}
            </details>
          ))}
        </>
      )}
      {t.flaky_tests.length > 0 && (
        <>
          <h3>Flaky (failed, then passed on the same commit)</h3>
          <ul>
            {t.flaky_tests.map((f) => (
              <li>
                {f.test} <span class="muted">({f.job})</span>
              </li>
            ))}
          </ul>
        </>
      )}
      {t.slowest.length > 0 && (
        <>
          <h3>Slowest</h3>
          <table class="list">
            <tbody>
              {t.slowest.map((s) => (
                <tr>
                  <td>{s.test}</td>
                  <td class="muted">{s.job}</td>
                  <td>{s.seconds.toFixed(2)}s</td>
                  <td>{s.status}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}

export function ReportBenchmarks({ report }: { report: Report }) {
  if (report.benchmarks.length === 0)
    return <p class="empty" data-testid="no-benchmarks">This run stored no benchmark results ($KILN_BENCHMARKS).</p>;
  return (
    <table class="list" data-testid="benchmarks">
      <thead>
        <tr>
          <th>Benchmark</th>
          <th>Metric</th>
          <th>This run</th>
          <th>Trend (last {Math.max(...report.benchmarks.map((b) => b.history.length))} of the series)</th>
          <th>Job</th>
          <th>Testbed</th>
        </tr>
      </thead>
      <tbody>
        {report.benchmarks.map((b) => (
          <tr data-testid="benchmark-row">
            <td>{b.benchmark}</td>
            <td>
              {b.metric} <span class="muted">({b.direction === "bigger_is_better" ? "bigger is better" : "smaller is better"})</span>
            </td>
            <td>
              {b.value_text}
            </td>
            <td>
              <Sparkline values={b.history} labels={b.history_text} />
            </td>
            <td>{b.job}</td>
            <td class="muted">{b.testbed}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
