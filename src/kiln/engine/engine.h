#pragma once
// A run from plan to result: which workflows an event triggers, their jobs and matrix
// instances, the needs graph, and the execution of each job on the host with GitHub's
// semantics. `kiln run` drives it directly; `kiln serve` (later) drives the same engine.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/config/priority_config.h"
#include "kiln/config/slurm_config.h"
#include "kiln/container/options.h"
#include "kiln/core/cgroup.h"
#include "kiln/core/result.h"
#include "kiln/core/run_as.h"
#include "kiln/exec/log_sink.h"
#include "kiln/gpu/health.h"
#include "kiln/gpu/labels.h"
#include "kiln/gpu/telemetry.h"
#include "kiln/store/host_store.h"
#include "kiln/store/records.h"
#include "kiln/workflow/references.h"

namespace kiln::store {
class Store;
}

namespace kiln::engine {

class ConcurrencyRegistry;  // concurrency_registry.h
class GpuQueue;             // schedule/gpu_queue.h

struct RunOptions {
  std::filesystem::path repository = ".";  // -C: the git repository
  // The repository's name in the runs this call stores (and so in their run numbers, which
  // count per repository and workflow). Empty: the repository's path (`kiln run`); `kiln serve`
  // names its checkouts by the configured owner/name from the start, so runs in flight are
  // listed and filtered under that name and numbered across triggers.
  std::string repository_name;
  std::optional<std::filesystem::path> workflows;   // -W: a workflow file or a directory
  std::string event_name = "push";                  // --event
  std::optional<std::filesystem::path> event_file;  // --event-file: github.event payload
  std::map<std::string, std::string> inputs;        // --input K=V (workflow_dispatch)
  std::vector<std::string> job_filter;              // --job ID (and the jobs they need)
  std::vector<std::pair<std::string, std::string>> matrix_filter;  // --matrix K=V
  std::map<std::string, std::string> secrets;    // --secret, --secret-file, environment
  std::map<std::string, std::string> extra_env;  // --env-file
  std::map<std::string, std::string> vars;       // --var, --var-file: the `vars` context
  std::string actor;     // --actor: github.actor and GITHUB_ACTOR (empty: $USER)
  int max_parallel = 0;  // 0: the number of CPUs
  std::optional<std::filesystem::path> store_path;  // default <repository>/.kiln/kiln.db
  // --simulate-gpus: the GPU inventory jobs are placed on, instead of this host's GPUs.
  std::optional<std::filesystem::path> simulate_gpus;
  // Read AMD GPUs from the amdgpu sysfs tree under this directory (`kiln gpus --sysfs-root`).
  std::optional<std::filesystem::path> gpu_sysfs_root;
  // Where GPU leases and quarantine are kept (store/host_store.h; empty: this host's default).
  store::HostStoreLocation host_store;
  gpu::HealthPolicy gpu_health;
  // The host config's custom runs-on labels (gpu-a100, linux.rocm.gpu.gfx942.2 ...).
  gpu::GpuLabelMap gpu_labels;
  // The host config's gpus.telemetry: sampling of GPU jobs (engine/collect/gpu_telemetry.h).
  gpu::TelemetryPolicy gpu_telemetry;
  bool keep_workspaces = false;
  // --keep-failed / KILN_KEEP_ON_FAILURE (and, when kiln.yml's debug.on_workflow_dispatch says
  // so, every workflow_dispatch run): a failed job keeps its container, workspace and GPUs for
  // `kiln exec` during keep_failed_for (kiln.yml debug.hold, default 30 min), or until `kiln
  // release` (engine/execute/debug_hold.h).
  bool keep_failed = false;
  bool keep_failed_on_dispatch = false;
  std::chrono::milliseconds keep_failed_for{30 * 60'000};
  // How many of a failing step's last log lines its job's summary keeps (StepFailure).
  int failure_lines = 10;
  // kiln.yml jobs.max_log_size: the bytes of a job's log (its lines and their newlines) that are
  // stored and shown; the lines past them are only counted (JobSummary::log_dropped_lines).
  std::uint64_t max_log_bytes = std::uint64_t{1} << 30;  // config::k_default_max_log_bytes
  // --actions-mirror / KILN_ACTIONS_MIRROR: where `owner/repo@ref` actions and reusable
  // workflows are read from (DIR/owner/repo@ref/); unset: such references are errors.
  std::optional<std::filesystem::path> actions_mirror;
  // Without a mirror: fetches owner/repo@ref actions and reusable workflows from the forge
  // (kiln.yml actions.url, exec/action_fetch.h). Unset: such references cannot be had.
  workflow::RepositoryFetcher actions_fetcher;
  // Every job's KILN_JOB_TOKEN is this prefix, '-', and the job's id, so that a watchdog can
  // find every process of this run (exec::start_orphan_reaper). Empty: one is made up.
  std::string job_token_prefix;
  // --container-engine (else KILN_CONTAINER_ENGINE): podman, docker, auto or a path.
  std::string container_engine;
  // --pull: never, missing or always (docs/containers.md).
  std::string pull_policy = "missing";
  // The host config's container policy: allowed options, forced user and limits.
  container::ContainerPolicy container_policy;
  // The host config's jobs.user: host jobs' steps run as that user (docs/configuration.md).
  std::optional<core::RunAs> job_user;
  // The host config's jobs.limits: each host job's steps run in a cgroup of their own with
  // these limits (core/cgroup.h), made in `cgroup_host`. No limits: no job cgroup.
  core::CgroupLimits job_limits;
  core::CgroupHost cgroup_host;
  // Set to true (from any thread) to cancel this run only, as request_cancel() cancels every
  // run of the process (`kiln serve`'s per-run cancel). Null: only request_cancel().
  std::shared_ptr<std::atomic<bool>> cancel;
  // Concurrency groups shared with other engine calls of this process (`kiln serve`: every
  // trigger's runs), so that a workflow's or job's `concurrency:` holds across them. Null:
  // groups hold among this call's runs only (`kiln run`).
  std::shared_ptr<ConcurrencyRegistry> concurrency;
  // A re-run (`kiln rerun`, POST /api/runs/ID/rerun) of the run `run_id` of the store: its
  // workflow (unless `workflows` names one) runs again as that run's next attempt
  // (github.run_attempt), with its run number. With failed_only, a job instance that succeeded
  // there is not run again unless a job it needs runs again: it is recorded as succeeded,
  // with the earlier job's outputs and artifacts (GitHub's "Re-run failed jobs").
  struct Rerun {
    std::int64_t run_id = 0;
    bool failed_only = false;
  };
  std::optional<Rerun> rerun;
  // The testbed a bisection measures on (`kiln serve` on a regression, server/bisect.h): jobs
  // get only GPUs of these models and this driver, and only the GPUs with these UUIDs when the
  // host has them all (the bad run's own GPUs). A job that asks for more GPUs than match never
  // runs here. Unset: any GPU.
  struct GpuPin {
    std::vector<std::string> models;
    std::string driver;  // empty: any
    std::vector<std::string> uuids;
  };
  std::optional<GpuPin> gpu_pin;
  // kiln.yml retry: a run whose failed jobs all failed for classes with retries left is run
  // again as its next attempt, its failed jobs only, on GPUs other than those it quarantined
  // (docs/failures.md). Empty: never.
  std::map<store::FailureClass, int> retry;
  // kiln.yml tests.quarantine: the flip rule that quarantines flaky tests (docs/failures.md).
  store::TestQuarantinePolicy test_quarantine;
  // Where artifacts are kept: <artifact_dir>/<run id>/<name>/. Empty: <repository>/.kiln/
  // artifacts (`kiln serve` keeps them in its work_dir, as its checkouts are removed).
  std::filesystem::path artifact_dir;
  // kiln.yml slurm: the jobs whose runs-on labels a pool names are submitted to Slurm and run by
  // `kiln agent` on the node (execute/slurm_executor.h); the others run on this host.
  std::optional<config::SlurmConfig> slurm;
  // Where a Slurm job's agent opens this run's store: the SQLite file or postgresql:// URL the
  // command itself uses (the nodes must reach it: docs/scale-out.md "Slurm").
  std::string agent_store;
  // kiln.yml priority: the classes whose order queued jobs start in (config/priority_config.h).
  config::PriorityPolicy priority;
  // The GPU jobs other engine calls of this process have waiting (`kiln serve`: every
  // trigger's), so that a job of a higher class in one goes before a lower one in another
  // (schedule/gpu_queue.h). Null: this call orders its own jobs only (`kiln run`).
  std::shared_ptr<GpuQueue> gpu_queue;
};

// Final states of jobs and steps, with GitHub's names (store/records.h).
using store::Conclusion;

struct StepSummary {
  int index = 0;
  std::string name;
  std::optional<std::string> id;
  Conclusion outcome = Conclusion::skipped;     // before continue-on-error
  Conclusion conclusion = Conclusion::skipped;  // after continue-on-error
  int exit_code = 0;
  std::chrono::milliseconds duration{0};
  std::map<std::string, std::string> outputs;
};

// How a failed (or cancelled) job's first failing step ended: for the summary at the end of
// `kiln run` and --json's "failure".
struct StepFailure {
  int step_index = 0;
  std::string step = {};  // its name
  // "exit code", "timeout", "cancelled", "error" (kiln could not run it); with no step: "gate"
  // (the perf gate failed the job), "gpu memory budget".
  std::string kind = {};
  int exit_code = 0;                         // with "exit code"
  std::vector<std::string> last_lines = {};  // the step's last lines (RunOptions::failure_lines)
};

// A test that failed or errored in the job's JUnit results (collect/test_results.h), for its
// check run: a row of the summary and, where the XML names the test's file and line, an
// annotation there.
struct TestFailure {
  std::string name;     // "classname::name", or the name alone
  std::string message;  // its first line
  std::string details;  // the failure's text (a traceback), cut to k_test_failure_lines lines
  std::string file;     // the test's source file relative to the workspace; empty: unknown
  int line = 0;
  bool quarantined = false;  // a quarantined test: it did not fail the job
};
inline constexpr std::size_t k_max_job_test_failures = 50;
inline constexpr std::size_t k_test_failure_lines = 20;

struct JobSummary {
  std::string key;     // unique in the run: "build (linux, 3.11)"
  std::string job_id;  // the workflow's job id: "build"
  std::string name;    // display name
  std::int64_t store_id = 0;
  nlohmann::ordered_json matrix;  // the combination, or null
  std::vector<std::string> labels;
  Conclusion conclusion = Conclusion::skipped;
  std::string reason;  // why it was skipped, cancelled or failed, when kiln knows
  std::chrono::milliseconds duration{0};
  std::map<std::string, std::string> outputs;
  std::vector<StepSummary> steps;
  std::optional<StepFailure> failure;  // the first step that failed, if one did
  // Why it failed (execute/failure_class.h, docs/failures.md); none when it did not fail.
  store::FailureClass failure_class = store::FailureClass::none;
  std::string failure_evidence;
  int order = 0;  // order in which the job finished (1-based), 0 when it never ran
  // The perf gate's report for the results the job published (perf::to_json), null if none.
  nlohmann::ordered_json perf;
  // The job's GPU summary (gpu::summary_to_json) when it held GPUs and sampling was on, else null.
  nlohmann::ordered_json gpu;
  // Its steps' annotations (::error file=F,line=L::..., kiln's own errors), masked, in order;
  // at most k_max_job_annotations (the forge's check run shows no more).
  std::vector<exec::Annotation> annotations;
  std::string step_summary;  // its steps' $GITHUB_STEP_SUMMARY (masked), as `kiln report` shows it
  // Its JUnit totals ({"total", "passed", "failed", ...} as the job row's extra["tests"]), null
  // when it wrote no result file; the first k_max_job_test_failures failed tests, masked.
  nlohmann::json tests;
  std::vector<TestFailure> test_failures;
  // The lines (and their bytes, newlines counted) past RunOptions::max_log_bytes: counted, not
  // stored or shown.
  std::uint64_t log_dropped_lines = 0;
  std::uint64_t log_dropped_bytes = 0;
  // How long it waited to start, and why (schedule/queue_timer.h).
  store::JobQueueTime queue;
};

inline constexpr std::size_t k_max_job_annotations = 1000;

struct WorkflowRunSummary {
  std::int64_t run_id = 0;
  int attempt = 1;            // github.run_attempt
  std::int64_t retry_of = 0;  // the earlier attempt this automatic retry ran again, or 0
  std::string retry_reason;   // why it was retried: "GPU 0 (…): Xid 79 … (gpu-fault)"
  std::filesystem::path workflow_path;
  std::string workflow_name;
  Conclusion conclusion = Conclusion::success;
  std::chrono::milliseconds duration{0};
  std::vector<JobSummary> jobs;  // in the order they finished; skipped jobs last
};

struct RunReport {
  // The last attempt of each run; an automatic retry's earlier attempts are in `retried`.
  std::vector<WorkflowRunSummary> runs;
  std::vector<WorkflowRunSummary> retried;
  std::vector<std::pair<std::string, std::string>> not_triggered;  // (workflow, reason)
  int exit_code() const;  // 0 all succeeded, 1 a job failed or was cancelled
};

// One line of a job's log as job_lines() gives it.
struct ShownLine {
  std::string kind, text;
};

// Where the engine reports progress. Called from job threads: implementations lock.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void run_started(const std::string& workflow_name, std::int64_t run_id) = 0;
  virtual void job_started(const std::string& job_key) = 0;
  // One masked line of a job's log. `kind` is output, group, endgroup, error, warning, notice,
  // debug or kiln (the runner's own messages).
  virtual void job_line(const std::string& job_key, std::string_view kind,
                        std::string_view text) = 0;
  // Lines of one job in a row (a block of a step's output): job_line() of each, unless an
  // observer can do better with them together (the terminal: one write).
  virtual void job_lines(const std::string& job_key, std::span<const ShownLine> lines) {
    for (const auto& line : lines) job_line(job_key, line.kind, line.text);
  }
  virtual void job_finished(const JobSummary& job) = 0;
  virtual void progress(int done, int total, const std::vector<std::string>& running) = 0;
  // A warning about the workflows ("FILE:LINE:COL: warning: ..."), before anything runs.
  virtual void warning(const std::string& text) = 0;
};

// Asks the engine to cancel everything running (Ctrl-C). Safe to call from any thread and from
// a signal handler.
void request_cancel();

// Plans the runs that the options' event triggers, as JSON (for `kiln run --dry-run --json`;
// the schema is in docs/cli.md), and the same plan as text for a person.
Result<nlohmann::ordered_json> plan_json(const RunOptions& options);
std::string plan_text(const nlohmann::ordered_json& plan);

// Runs every workflow that the options' event triggers. Bad input (workflow errors, bad
// options) is an error; a job's failure is not (it is in the report).
Result<RunReport> run(const RunOptions& options, store::Store& store, RunObserver& observer);

}  // namespace kiln::engine
