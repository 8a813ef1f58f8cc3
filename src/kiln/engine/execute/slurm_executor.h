#pragma once
// The Slurm Executor (kiln.yml slurm:, docs/scale-out.md "Slurm"): a job whose runs-on labels a
// pool names is submitted with sbatch (--gres=gpu[:TYPE]:N from its GPU request, --time from
// timeout-minutes, the pool's partition, account, QOS and arguments), and `kiln agent` runs it on
// the node Slurm picks, through the same job runner as a host job, writing to the run's store.
// The files that pass between the two are in slurm_job.h. One watcher thread follows every
// submitted job: the agent's outcome ends it; a Slurm job that is gone without one (the agent
// or its node died, a scancel from outside) is an infrastructure failure, and so is one the
// cluster ended (NODE_FAIL, PREEMPTED, BOOT_FAIL) even when the agent had time to say
// "cancelled". Slurm is told not to requeue a job itself (--no-requeue): the run's retry policy
// runs it again as a new attempt (retry: infra), recorded as such, once by default. cancel() is
// scancel: Slurm signals the agent (SIGTERM, which cancels the job's steps as Ctrl-C does), and
// kills what is left after the cluster's KillWait.
//
// LabelRouter sends each job to Slurm or to the host executor by its labels.

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kiln/core/thread_annotations.h"
#include "kiln/engine/execute/executor.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/engine/record/run_recorder.h"
#include "kiln/plan/event.h"

namespace kiln::engine {

struct SlurmExecutorContext {
  const RunOptions* options = nullptr;  // options->slurm is set
  const RepositoryInfo* repo = nullptr;
  const plan::Event* event = nullptr;
  RunRecorder* recorder = nullptr;  // for a job that ends without the agent's outcome
  std::filesystem::path kiln_dir;
};

// The sbatch arguments of one job (without the script), or why it cannot go to Slurm (a GPU
// model the pool maps to no GRES type, gpu:all). Pure, for tests.
Result<std::vector<std::string>> sbatch_arguments(const config::SlurmPool& pool,
                                                  const JobSpec& spec, int timeout_minutes);

// `squeue -h -t all -o '%i %T'`: each listed job's state (RUNNING, NODE_FAIL, ...). Pure.
std::map<std::string, std::string> parse_squeue_states(const std::string& text);
// Whether a Slurm job in `state` has ended (COMPLETED, FAILED, CANCELLED, NODE_FAIL, ...).
bool slurm_state_ended(const std::string& state);
// Why a job that ended in `state` did, when the cluster ended it (NODE_FAIL, PREEMPTED,
// BOOT_FAIL): an infrastructure failure whatever the agent had time to say. Else empty.
std::string slurm_cluster_end(const std::string& state);

class SlurmExecutor final : public Executor {
 public:
  explicit SlurmExecutor(SlurmExecutorContext context);
  ~SlurmExecutor() override;  // stops the watcher (every job has finished by then)
  SlurmExecutor(const SlurmExecutor&) = delete;
  SlurmExecutor& operator=(const SlurmExecutor&) = delete;

  void start(JobId id, JobSpec spec, ExecutorEvents& events) override;
  void cancel(JobId id, const StopReason& reason) override;

 private:
  struct Job;
  void watch();
  void finish(Job& job, JobOutcome outcome);
  void fail_infra(Job& job);
  std::string command(const std::string& name) const;

  SlurmExecutorContext context_;
  kiln::Mutex mutex_;
  std::map<JobId, std::unique_ptr<Job>> jobs_ GUARDED_BY(mutex_);
  std::atomic<bool> stopping_{false};
  std::thread watcher_;
};

class LabelRouter final : public Executor {
 public:
  LabelRouter(const config::SlurmConfig& slurm, Executor& host, Executor& remote)
      : slurm_(slurm), host_(host), remote_(remote) {}
  void start(JobId id, JobSpec spec, ExecutorEvents& events) override;
  void cancel(JobId id, const StopReason& reason) override;

 private:
  const config::SlurmConfig& slurm_;
  Executor& host_;
  Executor& remote_;
  kiln::Mutex mutex_;
  std::map<JobId, Executor*> routed_ GUARDED_BY(mutex_);
};

}  // namespace kiln::engine
