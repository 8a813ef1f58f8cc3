#pragma once
// The host Executor: each job runs the job runner (job_runner.h) on a thread of its own, its lines
// and its end reported as ExecutorEvents. A thread that cannot be started fails that job as an
// infrastructure failure (recorded like any other), instead of ending the process.

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "kiln/core/thread_annotations.h"
#include "kiln/engine/execute/executor.h"
#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/engine/plan/repository.h"
#include "kiln/engine/record/run_recorder.h"
#include "kiln/exec/cancel_token.h"
#include "kiln/exec/masker.h"

namespace kiln::store {
class Store;
}

namespace kiln::engine {

// What every job of a run shares.
struct HostExecutorContext {
  const RunOptions* options = nullptr;
  const RepositoryInfo* repo = nullptr;
  const plan::Event* event = nullptr;
  store::Store* store = nullptr;    // the run's masking store
  RunRecorder* recorder = nullptr;  // over that store
  exec::Masker* masker = nullptr;
  GpuSupervisor* gpus = nullptr;  // after-job checks, holders and samplers of GPU jobs
  std::filesystem::path kiln_dir;
};

// Starts `body` on a new thread; throws std::system_error when the system has none to give
// (std::thread's contract). Replaceable so that a test can refuse.
using SpawnThread = std::function<std::thread(std::function<void()> body)>;

class HostExecutor final : public Executor {
 public:
  explicit HostExecutor(HostExecutorContext context, SpawnThread spawn = {});
  ~HostExecutor() override;  // waits for every job's thread
  HostExecutor(const HostExecutor&) = delete;
  HostExecutor& operator=(const HostExecutor&) = delete;

  void start(JobId id, JobSpec spec, ExecutorEvents& events) override;
  void cancel(JobId id, const StopReason& reason) override;

 private:
  struct Job;

  HostExecutorContext context_;
  SpawnThread spawn_;
  kiln::Mutex mutex_;
  std::map<JobId, std::unique_ptr<Job>> jobs_ GUARDED_BY(mutex_);
};

}  // namespace kiln::engine
