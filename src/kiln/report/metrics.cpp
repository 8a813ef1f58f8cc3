#include "kiln/report/metrics.h"

#include <cmath>
#include <functional>
#include <iterator>
#include <map>

#include <fmt/format.h>

namespace kiln::report {
namespace {

// Shortest text that reads back as the same double; Prometheus spells the specials +Inf/NaN.
std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{}", value);
}

std::string gpu_labels(const GpuMetrics& g) {
  return fmt::format("gpu=\"{}\",UUID=\"{}\",device=\"{}\",modelName=\"{}\",Hostname=\"{}\"",
                     g.index, escape_label_value(g.uuid), escape_label_value(g.device),
                     escape_label_value(g.model), escape_label_value(g.hostname));
}

void gpu_family(std::string& out, const std::vector<GpuMetrics>& gpus, std::string_view name,
                std::string_view type, std::string_view help,
                const std::function<std::optional<double>(const GpuMetrics&)>& field) {
  std::string lines;
  for (const auto& g : gpus)
    if (auto value = field(g))
      lines += fmt::format("{}{{{}}} {}\n", name, gpu_labels(g), number(*value));
  // A family with no sample is left out entirely (no HELP without a series).
  if (lines.empty()) return;
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}", name, help, name, type, lines);
}

// kiln_job_queue_seconds: one histogram series per (runs-on labels, GPU model).
std::string queue_histogram(const std::vector<QueueWait>& waits) {
  struct Series {
    std::vector<std::uint64_t> buckets = std::vector<std::uint64_t>(std::size(k_queue_buckets));
    std::uint64_t count = 0;
    double sum = 0;
  };
  std::map<std::pair<std::string, std::string>, Series> series;
  for (const auto& wait : waits) {
    auto& s = series[{wait.labels, wait.gpu_model}];
    for (std::size_t i = 0; i < std::size(k_queue_buckets); ++i)
      if (wait.seconds <= k_queue_buckets[i]) ++s.buckets[i];
    ++s.count;
    s.sum += wait.seconds;
  }
  std::string out =
      "# HELP kiln_job_queue_seconds Time jobs waited from queued to started (in s), by runs-on "
      "labels and GPU model.\n# TYPE kiln_job_queue_seconds histogram\n";
  for (const auto& [key, s] : series) {
    const auto labels = fmt::format("labels=\"{}\",gpu_model=\"{}\"", escape_label_value(key.first),
                                    escape_label_value(key.second));
    for (std::size_t i = 0; i < std::size(k_queue_buckets); ++i)
      out += fmt::format("kiln_job_queue_seconds_bucket{{{},le=\"{}\"}} {}\n", labels,
                         number(k_queue_buckets[i]), s.buckets[i]);
    out += fmt::format("kiln_job_queue_seconds_bucket{{{},le=\"+Inf\"}} {}\n", labels, s.count);
    out += fmt::format("kiln_job_queue_seconds_sum{{{}}} {}\n", labels, number(s.sum));
    out += fmt::format("kiln_job_queue_seconds_count{{{}}} {}\n", labels, s.count);
  }
  return out;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string render_prometheus(const std::vector<GpuMetrics>& gpus, const KilnMetrics& kiln) {
  std::string out;
  gpu_family(out, gpus, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).",
             [](const GpuMetrics& g) { return g.utilization_percent; });
  gpu_family(out, gpus, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
             [](const GpuMetrics& g) { return g.memory_used_mib; });
  gpu_family(out, gpus, "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
             [](const GpuMetrics& g) { return g.memory_free_mib; });
  gpu_family(out, gpus, "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).",
             [](const GpuMetrics& g) { return g.temperature_c; });
  gpu_family(out, gpus, "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).",
             [](const GpuMetrics& g) { return g.power_w; });
  gpu_family(out, gpus, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
             "Total energy consumption since boot (in mJ).",
             [](const GpuMetrics& g) { return g.energy_mj; });

  gpu_family(out, gpus, "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
             [](const GpuMetrics& g) { return g.memory_copy_utilization_percent; });
  gpu_family(out, gpus, "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).",
             [](const GpuMetrics& g) { return g.sm_clock_mhz; });
  gpu_family(out, gpus, "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
             [](const GpuMetrics& g) { return g.memory_clock_mhz; });
  gpu_family(out, gpus, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
             "Current clock throttle reasons (bitmask of NVML clock-event reasons).",
             [](const GpuMetrics& g) { return g.clock_throttle_reasons; });
  std::string processes;
  for (const auto& g : gpus)
    for (const auto& [pid, mib] : g.process_memory_mib)
      processes += fmt::format("kiln_gpu_process_memory_used_mib{{{},pid=\"{}\"}} {}\n",
                               gpu_labels(g), pid, number(mib));
  if (!processes.empty())
    out +=
        "# HELP kiln_gpu_process_memory_used_mib GPU memory used by a process (in MiB).\n"
        "# TYPE kiln_gpu_process_memory_used_mib gauge\n" +
        processes;

  if (!gpus.empty()) {
    out +=
        "# HELP kiln_gpu_state Kiln's state of each GPU: 1 for the state it is in.\n"
        "# TYPE kiln_gpu_state gauge\n";
    for (const auto& g : gpus)
      for (const char* state : {"free", "leased", "busy", "quarantined"})
        out += fmt::format("kiln_gpu_state{{{},state=\"{}\"}} {}\n", gpu_labels(g), state,
                           g.state == state ? 1 : 0);
  }
  out += fmt::format("# HELP kiln_gpus GPUs of this host.\n# TYPE kiln_gpus gauge\nkiln_gpus {}\n",
                     gpus.size());
  if (kiln.store_read) {
    out += fmt::format(
        "# HELP kiln_gpu_leases GPU leases held by kiln jobs on this host.\n"
        "# TYPE kiln_gpu_leases gauge\nkiln_gpu_leases {}\n"
        "# HELP kiln_gpus_quarantined GPUs of this host in quarantine.\n"
        "# TYPE kiln_gpus_quarantined gauge\nkiln_gpus_quarantined {}\n",
        kiln.gpu_leases, kiln.gpus_quarantined);
    out += "# HELP kiln_runs Runs in the store, by status.\n# TYPE kiln_runs gauge\n";
    for (const char* status :
         {"queued", "running", "success", "failure", "cancelled", "interrupted"}) {
      auto it = kiln.runs_by_status.find(status);
      out += fmt::format("kiln_runs{{status=\"{}\"}} {}\n", status,
                         it == kiln.runs_by_status.end() ? 0 : it->second);
    }
    out +=
        "# HELP kiln_jobs Jobs of the runs not finished yet, by status.\n"
        "# TYPE kiln_jobs gauge\n";
    for (const char* status : {"queued", "waiting", "running", "success", "failure", "cancelled",
                               "skipped", "interrupted"}) {
      auto it = kiln.jobs_by_status.find(status);
      out += fmt::format("kiln_jobs{{status=\"{}\"}} {}\n", status,
                         it == kiln.jobs_by_status.end() ? 0 : it->second);
    }
  }
  if (kiln.store_read) out += queue_histogram(kiln.queue_waits);
  if (kiln.serve) {
    const auto& serve = *kiln.serve;
    out +=
        "# HELP kiln_serve_triggers Triggers (accepted events and re-runs) in the store, by "
        "status.\n# TYPE kiln_serve_triggers gauge\n";
    for (const char* status :
         {"queued", "waiting_approval", "running", "finished", "failed", "cancelled"}) {
      auto it = serve.triggers_by_status.find(status);
      out += fmt::format("kiln_serve_triggers{{status=\"{}\"}} {}\n", status,
                         it == serve.triggers_by_status.end() ? 0 : it->second);
    }
    out += fmt::format(
        "# HELP kiln_serve_runs_running Runs this server is executing.\n"
        "# TYPE kiln_serve_runs_running gauge\nkiln_serve_runs_running {}\n",
        serve.runs_running);
    out +=
        "# HELP kiln_serve_webhook_deliveries_total Webhook deliveries received since the "
        "server started, by result.\n# TYPE kiln_serve_webhook_deliveries_total counter\n";
    for (const char* result : {"accepted", "duplicate", "ignored", "bad_signature", "malformed",
                               "too_large", "unavailable", "error"}) {
      auto it = serve.webhook_deliveries.find(result);
      out += fmt::format("kiln_serve_webhook_deliveries_total{{result=\"{}\"}} {}\n", result,
                         it == serve.webhook_deliveries.end() ? 0 : it->second);
    }
  }
  return out;
}

}  // namespace kiln::report
