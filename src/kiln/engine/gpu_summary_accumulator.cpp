#include "kiln/engine/gpu_summary_accumulator.h"

#include <algorithm>

namespace kiln::engine {

void GpuSummaryAccumulator::account(PerGpu& gpu, const gpu::GpuSample& s, double dt) {
  // The order of gpu::summarize's loop, so both give the same numbers.
  if (s.energy_mj) {
    if (!gpu.first_energy) gpu.first_energy = s.energy_mj;
    gpu.last_energy = s.energy_mj;
    gpu.after_last_energy_j = 0;
  }
  if (s.power_w) {
    gpu.integrated_j += *s.power_w * dt;
    gpu.after_last_energy_j += *s.power_w * dt;
    gpu.have_power = true;
  }
  if (std::ranges::any_of(s.throttle_reasons, gpu::is_throttling)) gpu.throttled_seconds += dt;
}

void GpuSummaryAccumulator::add(const gpu::GpuSample& sample) {
  ++samples_;
  start_ms_ = std::min(start_ms_.value_or(sample.time_ms), sample.time_ms);
  peak_memory_mib_ = std::max(peak_memory_mib_, sample.memory_used_mib);
  memory_sum_ += static_cast<double>(sample.memory_used_mib);
  if (sample.temperature_c)
    max_temperature_c_ = std::max(max_temperature_c_.value_or(-273.0), *sample.temperature_c);
  auto [it, first] = gpus_.try_emplace(sample.index);
  PerGpu& gpu = it->second;
  if (!first) {
    double dt = static_cast<double>(std::max<std::int64_t>(0, sample.time_ms - gpu.last.time_ms));
    account(gpu, gpu.last, dt / 1000.0);
  }
  if (sample.utilization_pct) {
    gpu.util_sum += *sample.utilization_pct;
    ++gpu.util_count;
  }
  ++gpu.samples;
  gpu.last = sample;
  gpu.last.processes.clear();  // not needed for the sums
}

gpu::GpuJobSummary GpuSummaryAccumulator::finish(int gpu_count,
                                                 std::chrono::milliseconds held) const {
  gpu::GpuJobSummary summary;
  summary.gpus = gpu_count;
  summary.samples = samples_;
  double held_s = static_cast<double>(held.count()) / 1000.0;
  summary.gpu_seconds_held = held_s * gpu_count;
  if (samples_ == 0) return summary;
  std::int64_t end = *start_ms_ + held.count();
  summary.peak_memory_mib = peak_memory_mib_;
  summary.max_temperature_c = max_temperature_c_;
  double utilization_sum = 0, energy_j = 0;
  int utilization_count = 0;
  bool have_energy = false;
  for (const auto& [index, accumulated] : gpus_) {
    PerGpu gpu = accumulated;  // the last sample is accounted on a copy: finish is const
    double dt = static_cast<double>(std::max(end, gpu.last.time_ms) - gpu.last.time_ms) / 1000.0;
    account(gpu, gpu.last, dt);
    summary.throttled_seconds += gpu.throttled_seconds;
    if (gpu.first_energy && gpu.samples > 1 && *gpu.last_energy >= *gpu.first_energy) {
      energy_j += static_cast<double>(*gpu.last_energy - *gpu.first_energy) / 1000.0 +
                  gpu.after_last_energy_j;
      have_energy = true;
    } else if (gpu.have_power) {
      energy_j += gpu.integrated_j;
      have_energy = true;
    }
    if (gpu.util_count > 0) {
      utilization_sum += gpu.util_sum;
      utilization_count += gpu.util_count;
      summary.gpu_seconds_busy += held_s * (gpu.util_sum / gpu.util_count) / 100.0;
    }
  }
  summary.mean_memory_mib = memory_sum_ / static_cast<double>(samples_);
  if (utilization_count > 0) summary.mean_utilization_pct = utilization_sum / utilization_count;
  if (have_energy) summary.energy_wh = energy_j / 3600.0;
  return summary;
}

}  // namespace kiln::engine
