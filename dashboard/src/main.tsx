// The kiln dashboard: runs, a run's jobs/logs/telemetry/tests/benchmarks, the GPU fleet, the
// benchmark trends, the quarantined tests.
import { render } from "preact";
import { useState } from "preact/hooks";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { setToken, token } from "./api";
import { BenchmarksPage } from "./benchmarks";
import { GpusPage } from "./gpus";
import { QuarantinePage } from "./quarantine";
import { onLinkClick, useRoute } from "./router";
import { RunPage } from "./run";
import { RunsPage } from "./runs";

function TokenControl() {
  const [has, setHas] = useState(token() !== "");
  const ask = () => {
    const value = prompt("API token (serve.api_tokens) for logs and actions, kept in this tab only; empty to forget it", token());
    if (value === null) return;
    setToken(value.trim());
    setHas(value.trim() !== "");
    location.reload();
  };
  return (
    <button class="token" data-testid="token-button" onClick={ask} title="Logs and actions (re-run, cancel, approve, artifacts) need an API token">
      {has ? "token ✓" : "set token"}
    </button>
  );
}

function App() {
  const route = useRoute();
  return (
    <div onClick={onLinkClick}>
      <header class="top">
        <a class="brand" href="/ui/">
          kiln
        </a>
        <nav>
          <a href="/ui/" class={route.page === "runs" || route.page === "run" ? "active" : ""}>
            Runs
          </a>
          <a href="/ui/gpus" class={route.page === "gpus" ? "active" : ""}>
            GPUs
          </a>
          <a href="/ui/benchmarks" class={route.page === "benchmarks" ? "active" : ""} data-testid="nav-benchmarks">
            Benchmarks
          </a>
          <a href="/ui/tests" class={route.page === "tests" ? "active" : ""} data-testid="nav-tests">
            Tests
          </a>
        </nav>
        <TokenControl />
      </header>
      <main>
        {route.page === "runs" && <RunsPage query={route.query} />}
        {route.page === "run" && <RunPage key={route.id} id={route.id} />}
        {route.page === "gpus" && <GpusPage />}
        {route.page === "benchmarks" && <BenchmarksPage query={route.query} />}
        {route.page === "tests" && <QuarantinePage />}
        {route.page === "missing" && <p class="empty">No page at {route.path}.</p>}
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
