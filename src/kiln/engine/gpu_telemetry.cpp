#include "kiln/engine/gpu_telemetry.h"

#include <fmt/format.h>

#include "kiln/exec/process_tracker.h"

namespace kiln::engine {

JobTelemetry::JobTelemetry(JobTelemetryOptions options)
    : options_(std::move(options)), started_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { loop(); });
}

JobTelemetry::~JobTelemetry() {
  if (thread_.joinable()) (void)stop();
}

void JobTelemetry::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    take_sample();
    lock.lock();
    wake_.wait_for(lock, options_.interval, [this] { return stopping_; });
  }
}

void JobTelemetry::take_sample() {
  if (!options_.sampler) return;
  auto samples = options_.sampler->sample(options_.gpus, options_.deadline);
  std::lock_guard lock(mutex_);
  if (!samples) {
    if (outcome_.sample_error.empty()) outcome_.sample_error = samples.error().message;
    return;
  }
  for (auto& sample : *samples) {
    if (options_.memory_budget_mib > 0) {
      // Only the job's own processes count against its budget.
      std::uint64_t job_mib = 0;
      const gpu::GpuProcess* biggest = nullptr;
      for (const auto& process : sample.processes) {
        if (exec::job_token_of(process.pid) != options_.job_token) continue;
        job_mib += process.used_mib;
        if (!biggest || process.used_mib > biggest->used_mib) biggest = &process;
      }
      if (job_mib > options_.memory_budget_mib && job_mib > peak_job_mib_) {
        peak_job_mib_ = job_mib;
        outcome_.budget_failure = fmt::format(
            "GPU memory budget of {} MiB exceeded on GPU {}: peak {} MiB, {} used {} MiB",
            options_.memory_budget_mib, sample.index, job_mib,
            exec::describe_process(biggest->pid), biggest->used_mib);
        if (!killed_) {
          killed_ = true;
          // The job's steps fail; the job runner reports budget_failure as the reason.
          (void)exec::kill_job_processes(options_.job_token);
        }
      }
    }
    outcome_.samples.push_back(std::move(sample));
  }
}

JobTelemetry::Outcome JobTelemetry::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::size_t before = outcome_.samples.size();
  take_sample();
  for (std::size_t i = before; i < outcome_.samples.size(); ++i)
    for (const auto& process : outcome_.samples[i].processes)
      if (process.used_mib > 0 && exec::job_token_of(process.pid) == options_.job_token)
        outcome_.leaks.push_back(fmt::format(
            "GPU memory leak: {} still held {} MiB on GPU {} after the job's steps ended",
            exec::describe_process(process.pid), process.used_mib, outcome_.samples[i].index));
  auto held = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started_);
  Outcome outcome = std::move(outcome_);
  outcome.summary =
      gpu::summarize(outcome.samples, static_cast<int>(options_.gpus.size()), held);
  return outcome;
}

}  // namespace kiln::engine
