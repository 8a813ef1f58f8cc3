// The JSON API of kiln serve (docs/serve.md#api) as the dashboard uses it. Everything is same-
// origin; the bearer token (for logs, the live stream and the actions) is kept in the tab's
// sessionStorage: entered once per tab, gone when the tab closes.

export interface Step {
  index: number;
  name: string;
  status: string;
  outcome: string | null;
  conclusion: string | null;
  exit_code: number | null;
  started_at: number;
  finished_at: number;
}

// A step's ::error/::warning/::notice (GET /api/runs/ID: jobs[].annotations). 0: not given.
export interface Annotation {
  level: string;
  message: string;
  title: string;
  file: string;
  line: number;
  end_line: number;
  column: number;
  end_column: number;
  step: number | null;
}

export interface Artifact {
  id: number;
  name: string;
  size: number;
  files: number;
  job_id: number | null;
  created_at: number;
  expires_at: number;
  url: string;
}

export interface Job {
  id: number;
  key: string;
  job: string;
  name: string;
  status: string;
  conclusion: string | null;
  labels: string[];
  matrix: Record<string, unknown> | null;
  started_at: number;
  finished_at: number;
  message: string;
  // Why it failed (docs/failures.md): code, test, timeout, oom, gpu-fault, gpu-busy, infra,
  // cancelled; null when it did not fail (or ran before kiln stored classes). The evidence is
  // the line the class was read from.
  failure_class: string | null;
  failure_evidence: string;
  node: string;
  needs: string[];
  // The steps' $GITHUB_STEP_SUMMARY as HTML the server made safe (kiln's Markdown renderer
  // escapes everything and emits only its own markup); null when no step wrote one.
  summary_html: string | null;
  // A re-run of failed jobs took this job's success over from an earlier attempt.
  reused_from: { run: number; job: number } | null;
  annotations?: Annotation[];
  steps: Step[];
}

export interface Run {
  id: number;
  number: number;
  repository: string;
  workflow: string;
  name: string;
  event: string;
  ref: string;
  sha: string;
  status: string;
  attempt: number;
  rerun_of: number | null;
  // A served run's trigger and commit (null for older rows and runs of `kiln run`).
  trigger?: { id: number; sender: string; received_at: number } | null;
  commit?: { message: string; author: string } | null;
  created_at: number;
  started_at: number;
  finished_at: number;
  jobs?: Job[];
}

export interface Trigger {
  id: number;
  repository: string;
  event: string;
  ref: string;
  sha: string;
  sender: string;
  status: string;
  message: string;
  run_ids: number[];
  created_at: number;
}

// A test in quarantine now (GET /api/tests/quarantine): it still runs and is reported, but its
// failures alone do not fail a job. Put there by the flip rule, or by hand (`manual`).
export interface QuarantinedTest {
  repository: string;
  test: string;
  reason: string;
  manual: boolean;
  since: number;
  expires_at: number;
}

export interface LogLine {
  seq: number;
  job_id: number;
  step: number | null;
  stream: string;
  text: string;
  time: number;
}

// GET /api/gpus (server/gpu_routes.h).
export interface Gpu {
  index: number;
  state: string;
  detail: string;
  since: number;
  uuid: string;
  vendor: string;
  model: string;
  arch: string;
  pci_bus_id: string;
  numa_node: number;
  memory_total_mib: number;
  memory_used_mib: number;
  driver_version: string;
  // A live reading, else the holder job's newest stored sample; null: neither.
  telemetry: {
    source: "live" | "job";
    time: number;
    utilization_pct: number | null;
    memory_utilization_pct: number | null;
    temperature_c: number | null;
    power_w: number | null;
  } | null;
  // The run and job of a lease this server holds; null for a free GPU or another process's lease.
  holder: {
    run_id: number;
    run_number: number;
    repository: string;
    workflow: string;
    job_id: number | null;
    job: string;
    url: string;
  } | null;
}

export interface GpuFleet {
  provider: string;
  gpus: Gpu[];
  links: { a: number; b: number; kind: string; width: number }[];
  // matrix[a][b]: the connection kind between GPUs a and b (null on the diagonal).
  topology: { islands: number[][]; matrix: (string | null)[][] };
}

// GET /api/benchmarks (server/benchmark_routes.h): a series of `kiln bench history --json`.
export interface BenchmarkSeries {
  metric: string;
  unit: string;
  direction: string;
  branch: string;
  testbed: string;
  points: { id: number; time: number; commit: string; run_id: number | null; value: number; value_text: string; samples: number[] }[];
  change_points: {
    index: number;
    commit: string;
    time: number;
    before: number;
    after: number;
    before_text: string;
    after_text: string;
    change_percent: number;
    p_value: number;
  }[];
}

export interface BenchmarkHistory {
  repository: string;
  benchmark: string;
  series: BenchmarkSeries[];
}

export interface TelemetrySample {
  t: number;
  util: number | null;
  mem_util: number | null;
  mem_used_mib: number | null;
  mem_total_mib: number | null;
  power_w: number | null;
  temp_c: number | null;
  throttle: unknown;
}

export interface Telemetry {
  jobs: {
    job_id: number;
    key: string;
    gpus: { index: number; uuid: string; samples: TelemetrySample[] }[];
  }[];
}

const TOKEN_KEY = "kiln.token";

// A token an older dashboard kept in localStorage moves to this tab's session and off the disk.
const legacy = localStorage.getItem(TOKEN_KEY);
if (legacy !== null) {
  if (!sessionStorage.getItem(TOKEN_KEY)) sessionStorage.setItem(TOKEN_KEY, legacy);
  localStorage.removeItem(TOKEN_KEY);
}

export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(value: string): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(): Record<string, string> {
  const t = token();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function checked(res: Response): Promise<Response> {
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = await res.json();
      if (body && typeof body.error === "string") message = body.error;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(res.status, message);
  }
  return res;
}

// What a failed read says on the page. 401: the server is private (serve.dashboard: private)
// and has no token, or a wrong one, from this tab.
export function describe(e: unknown): string {
  if (e instanceof ApiError && e.status === 401)
    return token()
      ? "The server refused the token: set another with “set token” at the top right."
      : "This dashboard is private (serve.dashboard: private): set an API token with “set token” at the top right.";
  return e instanceof ApiError ? e.message : String(e);
}

export async function get<T>(path: string): Promise<T> {
  return (await (await checked(await fetch(path, { headers: authHeaders() }))).json()) as T;
}

// A POST with the token (the actions: re-run, cancel, approve); the answer's JSON.
export async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const res = await fetch(path, {
    method: "POST",
    headers: { ...authHeaders(), "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return (await (await checked(res)).json()) as T;
}

// A GET of a file with the token, saved by the browser under `filename` (a plain link cannot
// send the Authorization header).
export async function download(path: string, filename: string): Promise<number> {
  const blob = await (await checked(await fetch(path, { headers: authHeaders() }))).blob();
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return blob.size;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export const TERMINAL = new Set(["success", "failure", "cancelled", "skipped", "interrupted"]);

export function duration(started: number, finished: number, now = Date.now()): string {
  if (!started) return "";
  const ms = (finished || now) - started;
  if (ms < 0) return "";
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export function when(ms: number): string {
  return ms ? new Date(ms).toLocaleString() : "";
}

export function branchOf(ref: string): string {
  if (ref.startsWith("refs/heads/")) return ref.slice("refs/heads/".length);
  if (ref.startsWith("refs/tags/")) return ref.slice("refs/tags/".length);
  return ref;
}
