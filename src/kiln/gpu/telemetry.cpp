#include "kiln/gpu/telemetry.h"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

namespace kiln::gpu {

namespace {

// nvmlClocksEventReason* bits, in bit order (NVML API reference, "Clocks Event Reasons").
constexpr std::array<std::pair<unsigned long long, std::string_view>, 9> k_reasons{{
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
}};

template <class T>
void put(nlohmann::json& out, const char* key, const std::optional<T>& value) {
  if (value) out[key] = *value;
}

template <class T>
Status get(const nlohmann::json& in, const char* key, std::optional<T>& value) {
  auto it = in.find(key);
  if (it == in.end() || it->is_null()) return {};
  if (!it->is_number())
    return fail(ErrorCode::invalid_input, "GPU sample: {} is not a number", key);
  value = it->get<T>();
  return {};
}

}  // namespace

std::vector<std::string> clock_event_reason_names(unsigned long long bits) {
  std::vector<std::string> names;
  for (auto [bit, name] : k_reasons)
    if (bits & bit) names.emplace_back(name);
  return names;
}

bool is_throttling(const std::string& reason) {
  return reason == "sw_power_cap" || reason == "hw_slowdown" || reason == "sw_thermal_slowdown" ||
         reason == "hw_thermal_slowdown" || reason == "hw_power_brake_slowdown";
}

nlohmann::json sample_to_json(const GpuSample& sample) {
  nlohmann::json out = nlohmann::json::object();
  out["index"] = sample.index;
  out["time_ms"] = sample.time_ms;
  put(out, "utilization_pct", sample.utilization_pct);
  put(out, "memory_utilization_pct", sample.memory_utilization_pct);
  out["memory_used_mib"] = sample.memory_used_mib;
  put(out, "temperature_c", sample.temperature_c);
  put(out, "power_w", sample.power_w);
  put(out, "energy_mj", sample.energy_mj);
  put(out, "sm_clock_mhz", sample.sm_clock_mhz);
  put(out, "memory_clock_mhz", sample.memory_clock_mhz);
  if (!sample.throttle_reasons.empty()) out["throttle_reasons"] = sample.throttle_reasons;
  if (!sample.processes.empty()) {
    auto& processes = out["processes"] = nlohmann::json::array();
    for (const auto& p : sample.processes)
      processes.push_back({{"pid", p.pid}, {"used_mib", p.used_mib}});
  }
  return out;
}

Result<GpuSample> sample_from_json(const nlohmann::json& in) {
  if (!in.is_object()) return fail(ErrorCode::invalid_input, "GPU sample: not an object");
  GpuSample sample;
  try {
    sample.index = in.at("index").get<int>();
    sample.time_ms = in.at("time_ms").get<std::int64_t>();
    sample.memory_used_mib = in.value("memory_used_mib", std::uint64_t{0});
    KILN_TRY_VOID(get(in, "utilization_pct", sample.utilization_pct));
    KILN_TRY_VOID(get(in, "memory_utilization_pct", sample.memory_utilization_pct));
    KILN_TRY_VOID(get(in, "temperature_c", sample.temperature_c));
    KILN_TRY_VOID(get(in, "power_w", sample.power_w));
    KILN_TRY_VOID(get(in, "energy_mj", sample.energy_mj));
    KILN_TRY_VOID(get(in, "sm_clock_mhz", sample.sm_clock_mhz));
    KILN_TRY_VOID(get(in, "memory_clock_mhz", sample.memory_clock_mhz));
    if (auto it = in.find("throttle_reasons"); it != in.end())
      sample.throttle_reasons = it->get<std::vector<std::string>>();
    if (auto it = in.find("processes"); it != in.end())
      for (const auto& p : *it)
        sample.processes.push_back({p.at("pid").get<int>(), p.at("used_mib").get<std::uint64_t>()});
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::invalid_input, "GPU sample: {}", e.what());
  }
  return sample;
}

void GpuSummaryAccumulator::account(PerGpu& gpu, const GpuSample& s, double dt) {
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
  if (std::ranges::any_of(s.throttle_reasons, is_throttling)) gpu.throttled_seconds += dt;
}

void GpuSummaryAccumulator::add(const GpuSample& sample) {
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

GpuJobSummary GpuSummaryAccumulator::finish(int gpu_count, std::chrono::milliseconds held) const {
  GpuJobSummary summary;
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

GpuJobSummary summarize(const std::vector<GpuSample>& samples, int gpu_count,
                        std::chrono::milliseconds held) {
  std::vector<const GpuSample*> ordered;
  ordered.reserve(samples.size());
  for (const auto& s : samples) ordered.push_back(&s);
  std::ranges::stable_sort(ordered, {}, &GpuSample::time_ms);
  GpuSummaryAccumulator accumulator;
  for (const auto* s : ordered) accumulator.add(*s);
  return accumulator.finish(gpu_count, held);
}

nlohmann::ordered_json summary_to_json(const GpuJobSummary& s) {
  nlohmann::ordered_json out;
  out["gpus"] = s.gpus;
  out["samples"] = s.samples;
  out["peak_memory_mib"] = s.peak_memory_mib;
  out["mean_memory_mib"] = s.mean_memory_mib;
  out["mean_utilization_pct"] =
      s.mean_utilization_pct ? nlohmann::ordered_json(*s.mean_utilization_pct) : nullptr;
  out["energy_wh"] = s.energy_wh ? nlohmann::ordered_json(*s.energy_wh) : nullptr;
  out["max_temperature_c"] =
      s.max_temperature_c ? nlohmann::ordered_json(*s.max_temperature_c) : nullptr;
  out["throttled_seconds"] = s.throttled_seconds;
  out["gpu_seconds_held"] = s.gpu_seconds_held;
  out["gpu_seconds_busy"] = s.gpu_seconds_busy;
  return out;
}

}  // namespace kiln::gpu
