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
  if (!it->is_number()) return fail(ErrorCode::invalid_input, "GPU sample: {} is not a number", key);
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

GpuJobSummary summarize(const std::vector<GpuSample>& samples, int gpu_count,
                        std::chrono::milliseconds held) {
  GpuJobSummary summary;
  summary.gpus = gpu_count;
  summary.samples = static_cast<int>(samples.size());
  double held_s = static_cast<double>(held.count()) / 1000.0;
  summary.gpu_seconds_held = held_s * gpu_count;
  if (samples.empty()) return summary;

  std::map<int, std::vector<const GpuSample*>> by_gpu;
  std::int64_t start = samples.front().time_ms;
  for (const auto& s : samples) {
    by_gpu[s.index].push_back(&s);
    start = std::min(start, s.time_ms);
  }
  std::int64_t end = start + held.count();

  double memory_sum = 0, utilization_sum = 0, energy_j = 0;
  int utilization_count = 0;
  bool have_energy = false;
  for (auto& [index, list] : by_gpu) {
    std::ranges::sort(list, {}, &GpuSample::time_ms);
    double gpu_util_sum = 0;
    int gpu_util_count = 0;
    double integrated_j = 0;
    double after_last_energy_j = 0;  // power integrated since the counter's last reading
    bool have_power = false;
    std::optional<std::uint64_t> first_energy, last_energy;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const GpuSample& s = *list[i];
      std::int64_t until = i + 1 < list.size() ? list[i + 1]->time_ms : std::max(end, s.time_ms);
      double dt = static_cast<double>(until - s.time_ms) / 1000.0;
      summary.peak_memory_mib = std::max(summary.peak_memory_mib, s.memory_used_mib);
      memory_sum += static_cast<double>(s.memory_used_mib);
      if (s.utilization_pct) {
        gpu_util_sum += *s.utilization_pct;
        ++gpu_util_count;
      }
      if (s.temperature_c)
        summary.max_temperature_c = std::max(summary.max_temperature_c.value_or(-273.0),
                                             *s.temperature_c);
      if (s.energy_mj) {
        if (!first_energy) first_energy = s.energy_mj;
        last_energy = s.energy_mj;
        after_last_energy_j = 0;
      }
      if (s.power_w) {
        integrated_j += *s.power_w * dt;
        after_last_energy_j += *s.power_w * dt;
        have_power = true;
      }
      if (std::ranges::any_of(s.throttle_reasons, is_throttling)) summary.throttled_seconds += dt;
    }
    if (first_energy && list.size() > 1 && *last_energy >= *first_energy) {
      energy_j += static_cast<double>(*last_energy - *first_energy) / 1000.0 + after_last_energy_j;
      have_energy = true;
    } else if (have_power) {
      energy_j += integrated_j;
      have_energy = true;
    }
    if (gpu_util_count > 0) {
      double mean = gpu_util_sum / gpu_util_count;
      utilization_sum += gpu_util_sum;
      utilization_count += gpu_util_count;
      summary.gpu_seconds_busy += held_s * mean / 100.0;
    }
  }
  summary.mean_memory_mib = memory_sum / static_cast<double>(samples.size());
  if (utilization_count > 0) summary.mean_utilization_pct = utilization_sum / utilization_count;
  if (have_energy) summary.energy_wh = energy_j / 3600.0;
  return summary;
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
