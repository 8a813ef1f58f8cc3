// The JSON API of kiln serve (docs/serve.md#api) as the dashboard uses it. Everything is same-
// origin; the bearer token (for logs and their live stream) is kept in localStorage.

export interface Step {
  index: number;
  name: string;
  status: string;
  conclusion: string | null;
  started_at: number;
  finished_at: number;
}

export interface Job {
  id: number;
  key: string;
  job: string;
  name: string;
  status: string;
  conclusion: string | null;
  labels: string[];
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

export interface Gpu {
  index: number;
  state: string;
  detail: string;
  since: number;
  // Fields a newer server may add; shown when present.
  [key: string]: unknown;
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

export function token(): string {
  return localStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(value: string): void {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
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

export async function get<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: authHeaders() });
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
  return (await res.json()) as T;
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
