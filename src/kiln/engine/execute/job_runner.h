#pragma once
// Runs one job instance on the host (or in its job container, container_job.h): its workspace and
// environment, its steps with GitHub's semantics, its post actions, and the clean-up of every
// process it started.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>

#include "kiln/engine/engine.h"
#include "kiln/engine/execute/executor.h"
#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/engine/plan/planner.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/engine/record/run_recorder.h"
#include "kiln/exec/cancel_token.h"
#include "kiln/exec/masker.h"
#include "kiln/gpu/gpu.h"
#include "kiln/store/store.h"
#include "kiln/workflow/expr/expr.h"

namespace kiln::engine {

struct JobSetup {
  const RunOptions* options = nullptr;
  const RepositoryInfo* repo = nullptr;
  const plan::Event* event = nullptr;
  store::Store* store = nullptr;    // logs, steps, artifacts
  RunRecorder* recorder = nullptr;  // the job row (record/run_recorder.h)
  RunObserver* observer = nullptr;
  exec::Masker* masker = nullptr;              // shared by the run: secrets and ::add-mask:: values
  const SelectedWorkflow* workflow = nullptr;  // the file the job is in (defaults, env)
  // The workflow that was triggered, when the job is in a workflow it calls: the github context
  // (github.workflow, GITHUB_WORKFLOW) is the caller's, as on GitHub. Null: `workflow`.
  const SelectedWorkflow* triggered = nullptr;
  const workflow::Job* job = nullptr;
  std::int64_t run_id = 0;
  std::int64_t run_number = 1;
  int run_attempt = 1;       // github.run_attempt: 2 and up for a re-run
  std::int64_t job_row = 0;  // the store row, created (queued) by the scheduler
  PlannedInstance instance;
  // The key the observer shows the job's lines under: "workflow/key" when another workflow of the
  // run has a job of the same id; empty: the instance's key.
  std::string shown_key;
  std::vector<std::string> labels;
  // The contexts every expression of the job sees from the start: inputs, vars, secrets,
  // needs, matrix, strategy (github, runner, env, job and steps are added per job).
  expr::Value contexts = expr::Value::object();
  std::vector<std::pair<std::string, std::string>> workflow_env;  // evaluated
  // The granted GPUs as the job's processes see them (CUDA_VISIBLE_DEVICES, KILN_GPUS, ...):
  // the last layer of every step's environment, so no workflow env can widen it.
  std::map<std::string, std::string> gpu_env;
  std::string job_token;  // KILN_JOB_TOKEN: every process of the job carries it
  // A check before the job's steps (the Slurm agent's health check of the node's GPUs): its
  // lines go to the job's log; a problem fails the job as an infrastructure failure, no step run.
  std::function<BeforeJob()> before_job;
  // For a job holding GPUs: their after-job check, run once the job's processes are killed;
  // returns the lines for the job's log and what it found (GpuSupervisor::after_job).
  std::function<AfterJob()> after_job;
  // For a job holding GPUs: names what holds them for `kiln gpus` (a debugging hold).
  std::function<void(const std::string& holder)> set_gpu_holder;
  // The granted GPUs themselves: a job container gets their device nodes (container_job.h),
  // the perf gate names its testbed by their model and driver.
  std::vector<gpu::GpuInfo> gpus;
  // For a job holding GPUs: its telemetry sampler (null: no sampling), the policy, and the
  // job's GPU memory budget in MiB (its gpu-mem-budget label, else the policy's; 0: none).
  std::function<std::unique_ptr<gpu::GpuSampler>()> make_sampler;
  gpu::TelemetryPolicy telemetry;
  std::uint64_t gpu_memory_budget_mib = 0;
  std::filesystem::path kiln_dir;             // <repository>/.kiln
  std::filesystem::path artifact_root;        // this run's artifacts (RunOptions::artifact_dir)
  const exec::CancelToken* cancel = nullptr;  // fail-fast, concurrency, Ctrl-C
};

JobSummary run_job(const JobSetup& setup);

// The fields of `setup` that come from the scheduler's job description, for each executor alike;
// `setup` points into `spec`, which must outlive it.
void set_job_spec(JobSetup& setup, const JobSpec& spec);

// Records the job as failed before (or instead of) running: its summary, a line for its log and
// its store row (an exception escaped the job, or no thread could be had for it).
JobSummary fail_job(const JobSetup& setup, const std::string& reason);

}  // namespace kiln::engine
