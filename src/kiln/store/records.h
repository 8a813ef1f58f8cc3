#pragma once
// The rows the store keeps: runs, jobs, steps, log chunks and artifacts. Plain values, so the
// engine can fill one in, hand it to the Store and get the same value back from any backend
// (SQLite today, PostgreSQL later). Later tables (GPU leases, GPU samples, test results,
// benchmark results) get their own records and one migration each.
//
// Conventions for every record:
// - ids are int64 row ids assigned by the store (0 = not stored yet);
// - times are milliseconds since the Unix epoch, 0 = not happened yet;
// - JSON columns hold nlohmann::json values; `null` means "none";
// - every member has an initializer, so designated initializers ({.run_id = 1}) compile
//   without g++'s -Wmissing-field-initializers;
// - text is stored as given: secrets must already be masked by the caller (the store never
//   sees the secret values, so it cannot mask them itself).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::store {

using TimeMs = std::int64_t;

// Milliseconds since the Unix epoch, from the system clock.
TimeMs now_ms();

// A run's life: queued → running → one of the terminal states. `interrupted` means the process
// that owned the run died before finishing it (found by Store::mark_interrupted).
enum class RunStatus { queued, running, success, failure, cancelled, interrupted };

// Jobs and steps have the same states as runs plus `waiting` (queued behind `needs`, a
// concurrency group or free GPUs) and `skipped` (an `if:` was false or a needed job failed).
enum class JobStatus {
  queued,
  waiting,
  running,
  success,
  failure,
  cancelled,
  skipped,
  interrupted
};
using StepStatus = JobStatus;

// The GitHub result of a finished job or step, as `needs.<job>.result` and
// `steps.<id>.outcome/conclusion` see it.
enum class Conclusion { success, failure, cancelled, skipped };

// Why a job failed, as far as kiln can tell (docs/failures.md): `none` for a job that did not
// fail; otherwise the code's fault (`code`, or `test` when only known-flaky tests failed), the
// limits' (`timeout`, `oom`), the GPU's (`gpu_fault`, `gpu_busy`), kiln's or its machinery's
// (`infra`), or nobody's (`cancelled`). Named with dashes: "gpu-fault".
enum class FailureClass { none, code, test, timeout, oom, gpu_fault, gpu_busy, infra, cancelled };

// Where a log chunk came from: the process's stdout or stderr, or Kiln itself ("Run
// actions/checkout@v4", "Job timed out").
enum class LogStream { out, err, system };

// Lowercase names ("running", "stdout"), stable: they are what the database and --json hold.
std::string_view to_string(RunStatus status);
std::string_view to_string(JobStatus status);
std::string_view to_string(Conclusion conclusion);
std::string_view to_string(LogStream stream);
Result<RunStatus> parse_run_status(std::string_view text);
Result<JobStatus> parse_job_status(std::string_view text);
Result<Conclusion> parse_conclusion(std::string_view text);
Result<LogStream> parse_log_stream(std::string_view text);
// "none", "code", "test", "timeout", "oom", "gpu-fault", "gpu-busy", "infra", "cancelled".
std::string_view to_string(FailureClass failure_class);
Result<FailureClass> parse_failure_class(std::string_view text);

// True for the states a run/job/step never leaves.
bool is_terminal(RunStatus status);
bool is_terminal(JobStatus status);

// The process that drives a run. A pid alone is not enough to tell whether the owner still
// lives (pids are reused), so the kernel's start time of the process is kept with it, and the
// host name, so a database shared between hosts never judges another host's processes.
struct ProcessIdentity {
  int pid = 0;
  // Field 22 of /proc/<pid>/stat: clock ticks after boot when the process started. 0 = unknown
  // (then a live pid counts as the owner).
  std::int64_t start_time = 0;
  std::string host{};

  friend bool operator==(const ProcessIdentity&, const ProcessIdentity&) = default;
};

struct Run {
  std::int64_t id = 0;
  // Per (repository, workflow) counter assigned by create_run, like GITHUB_RUN_NUMBER.
  std::int64_t number = 0;
  std::string repository{};     // path or name of the repository
  std::string workflow_path{};  // the workflow file, relative to the repository when possible
  std::string workflow_name{};  // `name:` of the workflow (or the file name when absent)
  std::string event{};          // push, pull_request, workflow_dispatch, schedule
  std::string ref{};            // refs/heads/main
  std::string sha{};
  RunStatus status = RunStatus::queued;
  TimeMs created_at = 0;
  TimeMs started_at = 0;
  TimeMs finished_at = 0;
  ProcessIdentity owner{};
  // Anything else worth keeping with the run: plan summary, inputs, actor.
  nlohmann::json extra{};
  // A re-run is a run of its own, the next attempt of the run it repeats (github.run_attempt):
  // rerun_of is that run's id (0: a first attempt). create_run keeps `number` for a re-run
  // (GitHub's run_number does not change) and assigns the next one otherwise.
  int attempt = 1;
  std::int64_t rerun_of = 0;
};

// How long a job waited to start, and why (docs/reports.md "Queue time"). Reasons: "slots" (this
// host's --max-parallel), "max-parallel" (the job's strategy.max-parallel), "concurrency" (a
// concurrency group), "priority" (a job of a higher class waits for the GPUs), "gpus" (the GPUs
// it asks for are busy), "approval" (the pull request waited to be approved).
struct JobQueueTime {
  std::string priority{};  // its class (kiln.yml priority:); "" for jobs recorded before them
  TimeMs queued_at = 0;    // its needs were done (0: not recorded)
  std::optional<std::int64_t> waited_ms{};  // queued to started; none: it did not start
  std::map<std::string, std::int64_t> reasons_ms{};
  std::string gpu_model{};  // of the GPUs it was given ("" for none)
};

// One started job's wait, for the kiln_job_queue_seconds histogram (Store::list_queue_times).
struct QueueSample {
  std::vector<std::string> labels;  // runs-on
  std::string gpu_model;
  std::int64_t waited_ms = 0;
};

struct Job {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  // Unique within the run: the display key with the matrix values, "build (linux, 3.11)".
  std::string key{};
  std::string workflow_job_id{};  // the id under `jobs:` in the workflow, "build"
  std::string name{};             // the job's resolved `name:`
  JobStatus status = JobStatus::queued;
  // After continue-on-error: what `needs.<job>.result` reports. Empty until the job ends.
  std::optional<Conclusion> conclusion{};
  nlohmann::json matrix{};   // the matrix combination, object or null
  nlohmann::json labels{};   // runs-on labels, array
  nlohmann::json outputs{};  // the job's outputs, object of strings
  TimeMs started_at = 0;
  TimeMs finished_at = 0;
  std::optional<int> exit_code{};  // of the failing step, or of the job's process
  std::string message{};           // why it ended as it did: "timed out after 10 minutes"
  nlohmann::json extra{};          // e.g. the container image, granted GPUs
  // Why it failed (none: it did not), and the line of evidence that says so.
  FailureClass failure_class = FailureClass::none;
  std::string failure_evidence{};
  JobQueueTime queue{};
};

struct Step {
  std::int64_t id = 0;
  std::int64_t job_id = 0;  // Job::id (the row id)
  int index = 0;            // 0-based position in the job, unique per job
  std::string name{};
  StepStatus status = StepStatus::queued;
  std::optional<Conclusion> outcome{};     // before continue-on-error
  std::optional<Conclusion> conclusion{};  // after continue-on-error
  std::optional<int> exit_code{};
  TimeMs started_at = 0;
  TimeMs finished_at = 0;
  nlohmann::json outputs{};  // from $GITHUB_OUTPUT, object of strings
};

// A log line (or a small batch of lines) to append.
struct LogLine {
  std::int64_t job_id = 0;
  std::optional<int> step_index{};  // empty: job-level lines (set-up, clean-up)
  LogStream stream = LogStream::out;
  std::string text{};  // already masked; one line without its newline, or lines joined by '\n'
  TimeMs time = 0;
};

// A stored log chunk. `seq` orders every chunk of a database: it grows strictly in commit
// order, so "everything after seq N" never misses a chunk committed later (live tails). It is
// not dense per job.
struct LogChunk {
  std::int64_t seq = 0;
  std::int64_t job_id = 0;
  std::optional<int> step_index{};
  LogStream stream = LogStream::out;
  std::string text{};
  TimeMs time = 0;
};

struct LogQuery {
  std::int64_t run_id = 0;
  std::optional<std::int64_t> job_id{};  // empty: every job of the run
  std::int64_t after_seq = 0;            // chunks with seq > after_seq
  int limit = 0;                         // 0: no limit
};

struct Artifact {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::optional<std::int64_t> job_id{};  // the job that uploaded it
  std::string name{};                    // unique within the run
  std::string path{};                    // where the files are stored
  std::int64_t size_bytes = 0;
  std::int64_t file_count = 0;
  TimeMs created_at = 0;
  int retention_days = 0;  // 0: kept until deleted
  TimeMs expires_at = 0;   // created_at + retention, 0: never
};

struct RunQuery {
  int limit = 20;              // newest first; 0: all
  std::string repository{};    // empty: every repository
  std::int64_t before_id = 0;  // paging: only runs with id < before_id (0: from the newest)
};

// One metric of one benchmark from one result file: a point of the series of
// (repository, benchmark, metric, branch, testbed). Results of different testbeds are never
// compared, so the testbed names what changes the numbers: GPU model and driver, runner labels.
struct BenchmarkResult {
  std::int64_t id = 0;
  std::string repository{};  // as Run::repository
  std::string benchmark{};   // "BM_Copy/1024"
  std::string metric{};      // "real_time", "time", "value"...
  std::string unit{};        // "ns", "items/s"
  std::string direction{};   // "smaller_is_better" or "bigger_is_better"
  std::string branch{};      // "main" (a branch name, not a ref)
  std::string testbed{};     // e.g. "gpus=NVIDIA H200 x1; driver=550.54; labels=gpu,self-hosted"
  std::string commit_sha{};
  TimeMs time = 0;                       // when measured (ingested); 0 means now
  std::optional<std::int64_t> run_id{};  // the run and job that published it, if any
  std::optional<std::int64_t> job_id{};
  std::string source{};           // the file it came from
  std::string format{};           // "google-benchmark", "custom"...
  double value = 0;               // the summary (median of the samples when there are some)
  std::vector<double> samples{};  // repetitions, possibly none
  nlohmann::json extra{};         // e.g. {"threshold": 10}
};

// One test case of a JUnit XML file a job wrote (report/junit.h), stored with the run's
// repository and commit so that its history across runs can be asked for.
struct TestCase {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::int64_t job_id = 0;
  std::string repository{};  // as Run::repository
  std::string commit_sha{};
  std::string suite{};      // <testsuite name>
  std::string classname{};  // <testcase classname>: "tests.test_io", "MathTest"
  std::string name{};       // <testcase name>
  std::string status{};     // "passed", "failed", "error" or "skipped"
  double seconds = 0;       // <testcase time>
  std::string message{};    // the failure/error/skipped message attribute
  std::string details{};    // the failure/error text (a traceback), truncated
  std::string output{};     // system-out + system-err, truncated
  std::string file{};       // the XML file, relative to the workspace
  bool flaky = false;       // passed here after failing in another run of the same commit
  TimeMs time = 0;          // when ingested; 0 means now
};

// Filters of list_test_cases; empty strings and empty optionals match everything.
struct TestCaseQuery {
  std::optional<std::int64_t> run_id{};
  std::optional<std::int64_t> job_id{};
  std::optional<std::int64_t> exclude_run_id{};
  std::string repository{};
  std::string commit{};  // exact commit
  std::string classname{};
  std::string name{};
  bool failed_only = false;  // status "failed" or "error"
  int limit = 0;             // the newest N (0: all); results come oldest first either way
};

// Filters of list_benchmark_results; empty strings and empty optionals match everything.
struct BenchmarkQuery {
  std::string repository{};
  std::string benchmark{};
  std::string metric{};
  std::string branch{};
  std::string testbed{};
  std::optional<std::int64_t> run_id{};          // only this run's results
  std::optional<std::int64_t> exclude_run_id{};  // every result but this run's
  std::string commit{};  // commits starting with this (hex digits only; empty: any)
  int limit = 0;         // the newest N (0: all); results come oldest first either way
};

// A run with its jobs and each job's steps, for `kiln report` and the API.
struct JobDetail {
  Job job{};
  std::vector<Step> steps{};  // by index
};
struct RunDetail {
  Run run{};
  std::vector<JobDetail> jobs{};  // in creation order
};

// A GPU granted to a job: host-wide, across every kiln process of the host (DESIGN.md "Store").
// The lease lives until the job's GPUs passed their after-job check, or until its owner process
// is gone (a crashed kiln): then the next kiln that looks reclaims it.
struct GpuLease {
  std::string gpu_uuid{};
  std::string holder{};     // who holds it, for `kiln gpus`: "repo: workflow / job (run 12)"
  std::string job_token{};  // the job's KILN_JOB_TOKEN: finds its processes; one per job
  std::int64_t run_id = 0;  // in the holder's store (runs may live in another database)
  ProcessIdentity owner{};  // the kiln process that holds the lease (pid 0: this process)
  TimeMs granted_at = 0;    // 0: now
};

// A GPU taken out of service by a failed health check, until a re-check passes or
// `kiln gpus --release`.
struct GpuQuarantine {
  std::string gpu_uuid{};
  std::string reason{};
  TimeMs since = 0;  // 0: now
  // For a GPU whose memory did not come back: the re-check passes only once the memory in use
  // is at most this. 0: the usual before-job limit applies.
  std::uint64_t memory_limit_mib = 0;
  // Only `kiln gpus --release` lifts it (a hardware fault: a person should look first).
  bool manual_release = false;
  std::string host{};  // whose GPU (list_fleet_gpu_quarantine; else this host)
};

// A test of a repository taken out of failing its jobs (docs/failures.md "Quarantined tests"):
// it still runs and is reported, but a job whose only failures are quarantined tests is green
// with a warning. Put there by the flip rule (kiln.yml tests.quarantine) or `kiln tests
// quarantine`; it ends at expires_at or with `kiln tests release` (released_at). An ended record
// is kept: the flip rule counts only the test's runs after it.
struct TestQuarantine {
  std::string repository{};  // as Run::repository
  std::string test{};        // "classname::name", or the name alone (report test_id)
  std::string reason{};      // "flipped 2 times in its last 10 runs (...)", or --reason
  bool manual = false;       // `kiln tests quarantine`; else the flip rule
  TimeMs since = 0;          // 0: now
  TimeMs expires_at = 0;
  TimeMs released_at = 0;  // `kiln tests release`; 0: not released
  // In force at `now`: not released and not expired.
  bool active(TimeMs now) const { return released_at == 0 && expires_at > now; }
  // When it ended (released or expired), 0 while in force.
  TimeMs ended(TimeMs now) const {
    if (released_at != 0) return released_at;
    return expires_at <= now ? expires_at : 0;
  }
};

// kiln.yml tests.quarantine: a test that flipped (failed and passed on one commit) `flips` times
// in its last `runs` results is quarantined for `expires` (docs/failures.md). flips 0: never
// automatically (`kiln tests quarantine` still works).
struct TestQuarantinePolicy {
  int flips = 2;
  int runs = 10;
  TimeMs expires = 14LL * 24 * 3600 * 1000;  // ms
};

// An event `kiln serve` accepted (a webhook delivery, `kiln trigger`): queued until a worker
// checks out its commit and runs the engine on it, which creates the runs (run_ids). A pull
// request from an untrusted fork waits in `waiting_approval` until someone approves it.
enum class TriggerStatus { queued, waiting_approval, running, finished, failed, cancelled };
std::string_view to_string(TriggerStatus status);
Result<TriggerStatus> parse_trigger_status(std::string_view text);

struct Trigger {
  std::int64_t id = 0;
  std::string delivery{};  // the forge's delivery id (X-GitHub-Delivery), unique; "" for none
  // The payload's identity ("push:SHA256-OF-BODY"), unique too: a signed body delivered again
  // under a new delivery id is a replay. "" for none (not checked).
  std::string identity{};
  std::string repository{};  // the name of the repository in the server's configuration
  std::string event{};       // push, pull_request
  std::string ref{};         // refs/heads/main, refs/pull/7/head
  std::string sha{};
  std::string sender{};  // who caused it (login), for the approval decision and the record
  TriggerStatus status = TriggerStatus::queued;
  std::string message{};     // why it failed or waits; who approved it
  nlohmann::json payload{};  // the event payload (github.event)
  nlohmann::json run_ids{};  // the runs the engine created for it, array (null: none yet)
  // null for an event; {"run": ID, "failed_only": BOOL} for a re-run of run ID (the server
  // runs that run's workflow again at the same commit, with the same payload).
  nlohmann::json rerun{};
  TimeMs created_at = 0;  // 0: now
  TimeMs updated_at = 0;  // 0: now
};

// One stored GPU sample of a job (issue 5; engine/gpu_sample_writer.h writes them while the job
// runs, report/ and `kiln serve` read them back). Fields the provider could not read are
// nullopt. A job's rows are thinned as it grows (the writer's retention rule keeps at most a
// fixed number per GPU, each kept row being the one of its window with the most memory used).
struct GpuSampleRecord {
  std::int64_t id = 0;
  std::int64_t job_id = 0;
  int gpu_index = 0;                               // the GPU's inventory index
  std::string gpu_uuid{};                          // "GPU-..."; empty when unknown
  TimeMs time = 0;                                 // when the GPU was read
  std::optional<double> utilization_pct{};         // compute, 0-100
  std::optional<double> memory_utilization_pct{};  // memory controller, 0-100
  std::int64_t memory_used_mib = 0;
  std::optional<std::int64_t> memory_total_mib{};
  std::optional<double> temperature_c{};
  std::optional<double> power_w{};
  std::optional<std::int64_t> energy_mj{};  // the driver's counter, millijoules
  std::optional<std::int64_t> sm_clock_mhz{};
  std::optional<std::int64_t> memory_clock_mhz{};
  std::int64_t throttle_reasons = 0;  // NVML clock-event reason bits (gpu/telemetry.h order)
  // The job's processes on the GPU: [{"pid": N, "used_mib": M}, ...] (an empty array: none).
  nlohmann::json processes = nlohmann::json::array();
};

}  // namespace kiln::store
