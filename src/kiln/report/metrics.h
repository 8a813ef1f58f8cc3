#pragma once
// Prometheus text exposition (format 0.0.4) for `kiln metrics` (docs/reports.md): each GPU of
// the host under the names and labels dcgm-exporter uses, so existing dashboards chart Kiln
// hosts unchanged, and kiln_* metrics of runs, jobs and GPU leases. The caller gathers the
// numbers (cli/metrics.cpp); this file only formats them.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::report {

// One GPU. A field the provider does not know is empty and its metric is left out (Prometheus
// reads a missing series as "unknown", a 0 as a measurement).
struct GpuMetrics {
  int index = 0;
  std::string uuid;
  std::string device;  // "nvidia0" (dcgm-exporter's device label); for AMD, the render node
  std::string model;
  std::string hostname;
  std::string state;  // Kiln's view: "free", "leased", "busy" or "quarantined"
  std::optional<double> utilization_percent;  // DCGM_FI_DEV_GPU_UTIL
  std::optional<double> memory_used_mib;      // DCGM_FI_DEV_FB_USED
  std::optional<double> memory_free_mib;      // DCGM_FI_DEV_FB_FREE
  std::optional<double> temperature_c;        // DCGM_FI_DEV_GPU_TEMP
  std::optional<double> power_w;              // DCGM_FI_DEV_POWER_USAGE
  std::optional<double> energy_mj;            // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)
  std::optional<double> memory_copy_utilization_percent;  // DCGM_FI_DEV_MEM_COPY_UTIL
  std::optional<double> sm_clock_mhz;                     // DCGM_FI_DEV_SM_CLOCK
  std::optional<double> memory_clock_mhz;                 // DCGM_FI_DEV_MEM_CLOCK
  // NVML's clock-event reason bits (gpu/telemetry.h), DCGM_FI_DEV_CLOCK_THROTTLE_REASONS
  std::optional<double> clock_throttle_reasons;
  // The GPU memory of each process on the GPU (pid, MiB): kiln_gpu_process_memory_used_mib.
  std::vector<std::pair<int, double>> process_memory_mib;
};

// What `kiln serve` adds on GET /metrics (docs/serve.md): its queue and its webhook receiver.
struct ServeMetrics {
  std::map<std::string, int> triggers_by_status;  // every trigger of the store
  int runs_running = 0;                           // runs this server's workers execute now
  // Webhook deliveries since the server started, by result: accepted, duplicate, ignored,
  // bad_signature, malformed, too_large, unavailable, error.
  std::map<std::string, std::int64_t> webhook_deliveries;
};

// One started job's time in the queue, for kiln_job_queue_seconds.
struct QueueWait {
  std::string labels;     // its runs-on labels, joined by ','
  std::string gpu_model;  // of the GPUs it was given ("" for none)
  double seconds = 0;
};

// kiln_job_queue_seconds's buckets (upper bounds, seconds): queue times of GPU CI run from
// seconds to hours.
inline constexpr double k_queue_buckets[] = {1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200};

struct KilnMetrics {
  std::map<std::string, int> runs_by_status;  // every run of the store
  std::map<std::string, int> jobs_by_status;  // the jobs of runs not finished yet (the queue)
  std::vector<QueueWait> queue_waits;         // every job of the store that started
  int gpu_leases = 0;                         // leases held on this host
  int gpus_quarantined = 0;
  bool store_read = false;  // false: the store could not be read; its metrics are left out
  std::optional<ServeMetrics> serve;  // set by `kiln serve` only
};

std::string render_prometheus(const std::vector<GpuMetrics>& gpus, const KilnMetrics& kiln);

// A label value as the exposition format wants it: \\, \" and \n escaped.
std::string escape_label_value(std::string_view value);

}  // namespace kiln::report
