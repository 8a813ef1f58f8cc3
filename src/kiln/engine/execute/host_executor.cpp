#include "kiln/engine/execute/host_executor.h"

#include <system_error>

#include <fmt/format.h>

#include "kiln/engine/execute/job_runner.h"

namespace kiln::engine {
// One started job: its spec (which the JobSetup points into), cancel token and thread.
struct HostExecutor::Job {
  Job(JobId id, JobSpec job_spec, ExecutorEvents& events)
      : spec(std::move(job_spec)), observer(id, events) {}
  JobSpec spec;
  exec::CancelToken cancel;
  ExecutorLineObserver observer;
  JobSetup setup;
  std::thread thread;
};

HostExecutor::HostExecutor(HostExecutorContext context, SpawnThread spawn)
    : context_(std::move(context)), spawn_(std::move(spawn)) {
  if (!spawn_) spawn_ = [](std::function<void()> body) { return std::thread(std::move(body)); };
}

HostExecutor::~HostExecutor() {
  std::map<JobId, std::unique_ptr<Job>> jobs;
  {
    kiln::MutexLock lock(mutex_);
    jobs.swap(jobs_);
  }
  for (auto& [id, job] : jobs)
    if (job->thread.joinable()) job->thread.join();
}

void HostExecutor::start(JobId id, JobSpec spec, ExecutorEvents& events) {
  auto job = std::make_unique<Job>(id, std::move(spec), events);
  const JobSpec& s = job->spec;
  JobSetup& setup = job->setup;
  setup.options = context_.options;
  setup.repo = context_.repo;
  setup.event = context_.event;
  setup.store = context_.store;
  setup.recorder = context_.recorder;
  setup.observer = &job->observer;
  setup.masker = context_.masker;
  set_job_spec(setup, s);
  GpuSupervisor* gpus = context_.gpus;
  if (!s.gpus.empty() && gpus) {
    setup.after_job = [gpus, token = s.job_token] { return gpus->after_job(token); };
    setup.set_gpu_holder = [gpus, token = s.job_token](const std::string& holder) {
      (void)gpus->set_holder(token, holder);
    };
  }
  setup.telemetry = context_.options->gpu_telemetry;
  if (!s.gpus.empty() && gpus && context_.options->gpu_telemetry.enabled)
    setup.make_sampler = [gpus] { return gpus->make_sampler(); };
  setup.kiln_dir = context_.kiln_dir;
  setup.cancel = &job->cancel;

  Job* started = job.get();
  {
    kiln::MutexLock lock(mutex_);
    jobs_[id] = std::move(job);
  }
  try {
    started->thread = spawn_([started, id, &events] {
      JobSummary summary = run_job(started->setup);
      StopReason stop = stop_reason_of(summary);
      events.finished(id, {std::move(summary), std::move(stop)});
    });
  } catch (const std::system_error& e) {
    // No thread to run it on (EAGAIN: the process or the host is at its thread limit): this job
    // fails, recorded as any failed job; the run and the others go on.
    StopReason stop{
        StopReason::Kind::infrastructure,
        fmt::format("infrastructure failure: cannot start a thread for the job: {}", e.what())};
    JobSummary summary = fail_job(started->setup, stop.text);
    events.finished(id, {std::move(summary), std::move(stop)});
  }
}

void HostExecutor::cancel(JobId id, const StopReason&) {
  kiln::MutexLock lock(mutex_);
  if (auto it = jobs_.find(id); it != jobs_.end()) it->second->cancel.cancel();
}

}  // namespace kiln::engine
