#pragma once
// Sampling a job's GPUs while it runs (issue 5, docs/gpus.md "Telemetry"): a thread that asks the
// provider's sampler for the job's granted GPUs every interval, writes the samples to the store
// in batches (gpu_sample_writer.h: bounded rows per GPU), folds them into the job's GPU summary
// as they come (gpu::GpuSummaryAccumulator: memory does not grow with the job's length), and
// enforces the job's GPU memory budget: when the job's own processes (found by
// KILN_JOB_TOKEN) use more than the budget on one GPU, the job's processes are killed and the job
// fails naming the peak and the process.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <map>
#include <optional>

#include "kiln/engine/collect/gpu_sample_writer.h"
#include "kiln/gpu/telemetry.h"
#include "kiln/store/store.h"

namespace kiln::engine {

struct JobTelemetryOptions {
  std::unique_ptr<gpu::GpuSampler> sampler;
  std::vector<int> gpus;  // inventory indices of the granted GPUs
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds deadline{2000};  // per sample of all the GPUs
  std::uint64_t memory_budget_mib = 0;       // 0: none
  std::string job_token;                     // KILN_JOB_TOKEN of the job's processes
  // Where the samples go (null: nowhere, the summary only): the job's store row, its GPUs'
  // UUIDs and totals, the batching and retention of gpu_sample_writer.h.
  store::Store* store = nullptr;
  GpuSampleWriterOptions writer;
};

class JobTelemetry {
 public:
  // Takes the first sample at once, then one every interval, on its own thread.
  explicit JobTelemetry(JobTelemetryOptions options);
  ~JobTelemetry();
  JobTelemetry(const JobTelemetry&) = delete;
  JobTelemetry& operator=(const JobTelemetry&) = delete;

  struct Outcome {
    gpu::GpuJobSummary summary;
    // "GPU memory budget of 1024 MiB exceeded on GPU 0: peak 2048 MiB, pid 12 (python3) used
    // 2048 MiB"; empty when kept (or no budget).
    std::string budget_failure;
    std::string sample_error;  // the first failed sample's error, when one failed
    std::string store_error;   // the first failed write of samples, when one failed
    // The job's processes still holding GPU memory in the last sample, taken when stop() is
    // called (after the steps): "GPU memory leak: pid 12 (sleep) still held 1024 MiB on GPU 0
    // after the job's steps ended".
    std::vector<std::string> leaks;
  };
  // Stops the thread (a sample under way finishes first), takes a last sample to find leaks,
  // and summarizes. Call once, after the job's steps and before its processes are killed.
  Outcome stop();

 private:
  void loop();
  // Returns the samples taken (empty when the sampler failed).
  std::vector<gpu::GpuSample> take_sample();
  // Whether a process carries the job's token; remembered per pid (read once from /proc).
  bool is_job_process(int pid);

  JobTelemetryOptions options_;
  std::chrono::steady_clock::time_point started_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool killed_ = false;
  std::uint64_t peak_job_mib_ = 0;
  Outcome outcome_;
  gpu::GpuSummaryAccumulator summary_;
  std::optional<GpuSampleWriter> writer_;
  std::map<int, bool> job_processes_;
  std::thread thread_;
};

}  // namespace kiln::engine
