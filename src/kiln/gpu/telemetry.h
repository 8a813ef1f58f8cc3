#pragma once
// Per-GPU telemetry while a job holds GPUs (issue 5): what one sample of a GPU holds, the
// interface every provider's sampler implements, and the job's GPU summary computed from its
// samples. The engine samples a job's granted GPUs at an interval (engine/gpu_telemetry.h).
//
// A sampler is built once per job (or per process) and then called many times, so it keeps what
// is expensive to set up (NVML initialised, device handles, sysfs paths) for its own life: one
// sample of one GPU must cost microseconds, not an nvmlInit.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/gpu/gpu.h"

namespace kiln::gpu {

// One reading of one GPU. Fields a provider cannot read stay unset (nullopt / empty).
struct GpuSample {
  int index = 0;                                 // the GPU's index in the inventory
  std::int64_t time_ms = 0;                      // Unix time of the reading, milliseconds
  std::optional<double> utilization_pct;         // compute ("GPU busy"), 0-100
  std::optional<double> memory_utilization_pct;  // memory controller busy, 0-100
  std::uint64_t memory_used_mib = 0;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  std::optional<std::uint64_t> energy_mj;  // a counter since the driver loaded, millijoules
  std::optional<std::uint32_t> sm_clock_mhz;
  std::optional<std::uint32_t> memory_clock_mhz;
  // Why the clocks are below their maximum now, as NVML names them (clock-event reasons):
  // "gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
  // "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
  // "display_clock_setting". See is_throttling().
  std::vector<std::string> throttle_reasons;
  // The processes on the GPU and their GPU memory (all of them: the engine picks the job's).
  std::vector<GpuProcess> processes;

  friend bool operator==(const GpuSample&, const GpuSample&) = default;
};

// NVML's clock-event reason bits (nvmlClocksEventReason*) as the names above, lowest bit first.
std::vector<std::string> clock_event_reason_names(unsigned long long bits);
// Whether a reason slows the GPU against the job's will: power caps, thermal and hardware
// slowdowns. Idle, application/display clock settings and sync boost are not throttling.
bool is_throttling(const std::string& reason);

// {index, time_ms, utilization_pct, memory_utilization_pct, memory_used_mib, temperature_c,
//  power_w, energy_mj, sm_clock_mhz, memory_clock_mhz, throttle_reasons, processes:[{pid,
//  used_mib}]}; unset fields are omitted. sample_from_json reads it back (store rows).
nlohmann::json sample_to_json(const GpuSample& sample);
Result<GpuSample> sample_from_json(const nlohmann::json& json);

// Reads the current state of some GPUs of a host. Not thread-safe: one caller at a time.
class GpuSampler {
 public:
  virtual ~GpuSampler() = default;
  // One sample of each GPU in `indices` (inventory indices), in that order, within `deadline`
  // for all of them. ErrorCode::timeout when the driver does not answer in time.
  virtual Result<std::vector<GpuSample>> sample(const std::vector<int>& indices,
                                                std::chrono::milliseconds deadline) = 0;
};

// The samplers of the three providers.
// NVML: loads `library`, initialises NVML once (on the first sample) and shuts it down when the
// sampler is destroyed; device handles are cached.
std::unique_ptr<GpuSampler> make_nvml_sampler(const std::string& library);
// amdgpu sysfs under `root` ("/" on a host): gpu_busy_percent, mem_busy_percent,
// mem_info_vram_used, hwmon temp1_input and power1_average (or power1_input), the current
// levels of pp_dpm_sclk and pp_dpm_mclk. No energy counter: the summary integrates power.
std::unique_ptr<GpuSampler> make_amd_sysfs_sampler(const std::filesystem::path& root);
// The simulated spec's optional "telemetry" object per GPU (simulated_provider.h), re-read on
// every sample so that a test can change it while a job runs.
std::unique_ptr<GpuSampler> make_simulated_sampler(const std::filesystem::path& spec);

// How the engine samples a job's GPUs (host config kiln.yml `gpus: telemetry:`).
struct TelemetryPolicy {
  bool enabled = true;
  std::chrono::milliseconds interval{1000};  // at least k_min_sample_interval (10 Hz)
  // A GPU memory budget for every GPU job (a job's `gpu-mem-budget:` label wins): the memory of
  // the job's processes on one GPU above it fails the job.
  std::optional<std::uint64_t> memory_budget_mib;
};
inline constexpr std::chrono::milliseconds k_min_sample_interval{100};

// A job's GPU summary over all its GPUs' samples (docs/gpus.md "Telemetry").
struct GpuJobSummary {
  int gpus = 0;
  int samples = 0;
  std::uint64_t peak_memory_mib = 0;  // the highest memory_used_mib of one GPU
  double mean_memory_mib = 0;         // over all samples of all GPUs
  std::optional<double> mean_utilization_pct;
  std::optional<double> energy_wh;  // energy counter deltas, else power integrated
  std::optional<double> max_temperature_c;
  double throttled_seconds = 0;  // GPU-seconds with a throttling reason
  double gpu_seconds_held = 0;   // GPUs x the time they were held
  double gpu_seconds_busy = 0;   // held, weighted by compute utilization
};

// A job's GPU summary computed as the samples come, without keeping them: a job that runs for
// days at 10 Hz keeps a few hundred bytes per GPU (the engine folds every sample in while the
// stored rows are thinned). `held` is how long the job held its GPUs; samples of one GPU are
// taken to last until the next sample of that GPU (the last one until the end of `held`
// measured from the first sample).
class GpuSummaryAccumulator {
 public:
  // Samples of one GPU must come in time order (a sample older than the GPU's previous one
  // counts as lasting 0 s); GPUs may interleave.
  void add(const GpuSample& sample);
  // The summary of every sample added (summarize below).
  GpuJobSummary finish(int gpu_count, std::chrono::milliseconds held) const;

 private:
  // What is left of one GPU's samples: running sums, and its last sample, whose duration is
  // known only when the next one comes (or at the end).
  struct PerGpu {
    GpuSample last;
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
  static void account(PerGpu& gpu, const GpuSample& s, double dt);

  std::map<int, PerGpu> gpus_;
  int samples_ = 0;
  std::optional<std::int64_t> start_ms_;
  std::uint64_t peak_memory_mib_ = 0;
  double memory_sum_ = 0;
  std::optional<double> max_temperature_c_;
};

// The summary of a whole set of samples, in any order (GpuSummaryAccumulator over them, each
// GPU's in time order).
GpuJobSummary summarize(const std::vector<GpuSample>& samples, int gpu_count,
                        std::chrono::milliseconds held);
nlohmann::ordered_json summary_to_json(const GpuJobSummary& summary);

}  // namespace kiln::gpu
