#pragma once
// A job's GPU summary computed as the samples come (issue 5): the same numbers as
// gpu::summarize over all the job's samples, without keeping the samples, so a job that runs for
// days at 10 Hz keeps a few hundred bytes per GPU instead of every reading. The samples stay in
// the store (gpu_sample_writer.h), thinned; the summary is exact.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>

#include "kiln/gpu/telemetry.h"

namespace kiln::engine {

class GpuSummaryAccumulator {
 public:
  // Samples of one GPU must come in time order (a sample older than the GPU's previous one
  // counts as lasting 0 s); GPUs may interleave.
  void add(const gpu::GpuSample& sample);
  // As gpu::summarize(all samples, gpu_count, held).
  gpu::GpuJobSummary finish(int gpu_count, std::chrono::milliseconds held) const;

 private:
  // What is left of one GPU's samples: running sums, and its last sample, whose duration is
  // known only when the next one comes (or at the end).
  struct PerGpu {
    gpu::GpuSample last;
    double util_sum = 0;
    int util_count = 0;
    double integrated_j = 0;
    double after_last_energy_j = 0;
    bool have_power = false;
    std::optional<std::uint64_t> first_energy, last_energy;
    int samples = 0;
    double throttled_seconds = 0;
  };
  // Accounts `s` as lasting `dt` seconds.
  static void account(PerGpu& gpu, const gpu::GpuSample& s, double dt);

  std::map<int, PerGpu> gpus_;
  int samples_ = 0;
  std::optional<std::int64_t> start_ms_;
  std::uint64_t peak_memory_mib_ = 0;
  double memory_sum_ = 0;
  std::optional<double> max_temperature_c_;
};

}  // namespace kiln::engine
