#pragma once
// The Executor seam: where the scheduler hands a job to run and hears how it ended. The host
// implementation (host_executor.h) runs the job runner on a thread of its own; a Slurm one would
// submit it. The scheduler only sees JobSpec values going out and events coming back.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/engine/engine.h"
#include "kiln/engine/plan/planner.h"
#include "kiln/gpu/gpu.h"
#include "kiln/gpu/request.h"
#include "kiln/workflow/expr/expr.h"

namespace kiln::engine {

// Why a job stopped before it succeeded, typed, with the words users see (JobSummary::reason,
// `kiln run --json`'s "reason", the store's job message) kept as they were.
struct StopReason {
  enum class Kind {
    none,            // it did not stop early
    failed_step,     // a step failed (exit code, error)
    timeout,         // timeout-minutes of the job or a step
    cancelled,       // Ctrl-C, a cancelled run, RunOptions::cancel
    fail_fast,       // a sibling matrix instance (or call) failed
    concurrency,     // a newer run in its concurrency group
    gate,            // the perf gate or the GPU memory budget
    infrastructure,  // kiln could not run it (a thread, an exception)
  };
  Kind kind = Kind::none;
  std::string text;

  static StopReason interrupt() { return {Kind::cancelled, "cancelled (interrupt)"}; }
  static StopReason fail_fast(const std::string& failed_key) {
    return {Kind::fail_fast, "cancelled by fail-fast: " + failed_key + " failed"};
  }
  static StopReason concurrency(const std::string& group) {
    return {Kind::concurrency, "cancelled: a newer run in concurrency group '" + group + "'"};
  }
  bool operator==(const StopReason&) const = default;
};
std::string_view to_string(StopReason::Kind kind);

// How a job ended: its summary (conclusion, steps, outputs, the reason as text) and why it
// stopped, typed. From the summary alone: stop_reason_of.
struct JobOutcome {
  JobSummary summary;
  StopReason stop;
};
StopReason stop_reason_of(const JobSummary& summary);

// Everything a job needs from the scheduler, as values (no pointers into the scheduler's state):
// what the job is, where it is recorded, its contexts, environment and GPU grant.
struct JobSpec {
  SelectedWorkflow workflow;   // the file the job is in (defaults, env)
  SelectedWorkflow triggered;  // the workflow that was triggered (the github context)
  std::string job_id;          // the job of `workflow`
  std::int64_t run_id = 0;
  std::int64_t run_number = 1;
  int run_attempt = 1;
  std::int64_t job_row = 0;
  PlannedInstance instance;
  std::string shown_key;  // JobSetup::shown_key
  std::vector<std::string> labels;
  expr::Value contexts = expr::Value::object();
  std::vector<std::pair<std::string, std::string>> workflow_env;
  std::map<std::string, std::string> gpu_env;  // the Placer's device environment
  std::string job_token;
  std::vector<gpu::GpuInfo> gpus;
  gpu::GpuRequest gpu_request;  // what runs-on asked for (a Slurm job's --gres)
  std::uint64_t gpu_memory_budget_mib = 0;
  std::filesystem::path artifact_root;
};

using JobId = std::uint64_t;

// What an executor reports. `line` may come from any thread; `finished` once per started job,
// from any thread (also from within start(), when the job could not be started).
class ExecutorEvents {
 public:
  virtual ~ExecutorEvents() = default;
  virtual void line(JobId id, const std::string& shown_key, std::string_view kind,
                    std::string_view text) = 0;
  // Lines in a row of one job: line() of each unless the events can take them together.
  virtual void lines(JobId id, const std::string& shown_key, std::span<const ShownLine> lines) {
    for (const auto& shown : lines) line(id, shown_key, shown.kind, shown.text);
  }
  virtual void finished(JobId id, JobOutcome outcome) = 0;
};

// The job runner's lines, as an executor's `line` events of one job: the observer an executor
// hands run_job (the job's end comes back as its outcome, not through the observer).
class ExecutorLineObserver final : public RunObserver {
 public:
  ExecutorLineObserver(JobId id, ExecutorEvents& events) : id_(id), events_(events) {}
  void run_started(const std::string&, std::int64_t) override {}
  void job_started(const std::string&) override {}
  void job_line(const std::string& job_key, std::string_view kind, std::string_view text) override {
    events_.line(id_, job_key, kind, text);
  }
  void job_lines(const std::string& job_key, std::span<const ShownLine> lines) override {
    events_.lines(id_, job_key, lines);
  }
  void job_finished(const JobSummary&) override {}
  void progress(int, int, const std::vector<std::string>&) override {}
  void warning(const std::string&) override {}

 private:
  JobId id_;
  ExecutorEvents& events_;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void start(JobId id, JobSpec spec, ExecutorEvents& events) = 0;
  // Asks a started job to stop; it still reports finished. A finished job's id is ignored.
  virtual void cancel(JobId id, const StopReason& reason) = 0;
};

}  // namespace kiln::engine
