#include "kiln/engine/collect/gpu_telemetry.h"

#include <fmt/format.h>

#include "kiln/exec/process_tracker.h"

namespace kiln::engine {

JobTelemetry::JobTelemetry(JobTelemetryOptions options)
    : options_(std::move(options)), started_(std::chrono::steady_clock::now()) {
  if (options_.store) writer_.emplace(*options_.store, options_.writer);
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

bool JobTelemetry::is_job_process(int pid) {
  auto [it, added] = job_processes_.try_emplace(pid, false);
  if (added) it->second = exec::job_token_of(pid) == options_.job_token;
  return it->second;
}

std::vector<gpu::GpuSample> JobTelemetry::take_sample() {
  if (!options_.sampler) return {};
  auto samples = options_.sampler->sample(options_.gpus, options_.deadline);
  std::lock_guard lock(mutex_);
  if (!samples) {
    if (outcome_.sample_error.empty()) outcome_.sample_error = samples.error().message;
    return {};
  }
  for (auto& sample : *samples) {
    // Only the job's own processes count against its budget and are stored with the sample.
    std::vector<gpu::GpuProcess> job_processes;
    std::uint64_t job_mib = 0;
    const gpu::GpuProcess* biggest = nullptr;
    for (const auto& process : sample.processes) {
      if (!is_job_process(process.pid)) continue;
      job_processes.push_back(process);
      job_mib += process.used_mib;
      if (!biggest || process.used_mib > biggest->used_mib) biggest = &process;
    }
    if (options_.memory_budget_mib > 0 && job_mib > options_.memory_budget_mib &&
        job_mib > peak_job_mib_) {
      peak_job_mib_ = job_mib;
      outcome_.budget_failure =
          fmt::format("GPU memory budget of {} MiB exceeded on GPU {}: peak {} MiB, {} used {} MiB",
                      options_.memory_budget_mib, sample.index, job_mib,
                      exec::describe_process(biggest->pid), biggest->used_mib);
      if (!killed_) {
        killed_ = true;
        // The job's steps fail; the job runner reports budget_failure as the reason.
        (void)exec::kill_job_processes(options_.job_token);
      }
    }
    summary_.add(sample);
    if (writer_)
      if (auto written = writer_->add(sample, job_processes);
          !written && outcome_.store_error.empty())
        outcome_.store_error = written.error().message;
  }
  return std::move(*samples);
}

JobTelemetry::Outcome JobTelemetry::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // A last sample finds the job's processes still holding memory: leaks. The cache of job
  // processes is not trusted here: a pid may have been reused since.
  for (const auto& sample : take_sample())
    for (const auto& process : sample.processes)
      if (process.used_mib > 0 && exec::job_token_of(process.pid) == options_.job_token)
        outcome_.leaks.push_back(fmt::format(
            "GPU memory leak: {} still held {} MiB on GPU {} after the job's steps ended",
            exec::describe_process(process.pid), process.used_mib, sample.index));
  if (writer_)
    if (auto written = writer_->flush(); !written && outcome_.store_error.empty())
      outcome_.store_error = written.error().message;
  auto held = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started_);
  Outcome outcome = std::move(outcome_);
  outcome.summary = summary_.finish(static_cast<int>(options_.gpus.size()), held);
  return outcome;
}

}  // namespace kiln::engine
