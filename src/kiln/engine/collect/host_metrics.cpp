#include "kiln/engine/collect/host_metrics.h"

#include <unistd.h>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "kiln/engine/collect/gpu_sample_writer.h"
#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/store/store.h"

namespace kiln::engine {
namespace {

std::string hostname() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "";
  return buffer;
}

void add_sample(report::GpuMetrics& m, const gpu::GpuSample& s, bool nvidia) {
  auto as_double = [](const auto& value) -> std::optional<double> {
    if (!value) return std::nullopt;
    return static_cast<double>(*value);
  };
  m.utilization_percent = s.utilization_pct;
  m.memory_copy_utilization_percent = s.memory_utilization_pct;
  m.temperature_c = s.temperature_c;
  m.power_w = s.power_w;
  m.energy_mj = as_double(s.energy_mj);
  m.sm_clock_mhz = as_double(s.sm_clock_mhz);
  m.memory_clock_mhz = as_double(s.memory_clock_mhz);
  // NVML reports its reasons (none is a reading); amdgpu sysfs has no such file: unknown.
  if (nvidia) m.clock_throttle_reasons = static_cast<double>(throttle_bits(s.throttle_reasons));
  for (const auto& p : s.processes)
    m.process_memory_mib.emplace_back(p.pid, static_cast<double>(p.used_mib));
}

}  // namespace

Result<HostMetrics> gather_host_metrics(const RunOptions& options, store::Store& store) {
  HostMetrics metrics;
  auto& kiln = metrics.kiln;
  GpuSupervisor supervisor(options);
  KILN_TRY(auto inventory, supervisor.inventory());
  if (!inventory->gpus.empty()) {
    KILN_TRY(auto states, supervisor.states());  // refreshes the inventory's memory figures
    const std::string host = hostname();
    for (const auto& g : inventory->gpus) {
      report::GpuMetrics m;
      m.index = g.index;
      m.uuid = g.uuid;
      m.model = g.model;
      m.hostname = host;
      m.device = g.device_nodes.empty()
                     ? fmt::format("{}{}", g.vendor == "amd" ? "card" : "nvidia", g.index)
                     : std::filesystem::path(g.device_nodes.front()).filename().string();
      m.memory_used_mib = static_cast<double>(g.memory_used_mib);
      if (g.memory_total_mib >= g.memory_used_mib)
        m.memory_free_mib = static_cast<double>(g.memory_total_mib - g.memory_used_mib);
      const auto& state = states.at(static_cast<std::size_t>(g.index));
      m.state = std::string(gpu_state_name(state.kind));
      if (state.kind == GpuState::Kind::leased) ++kiln.gpu_leases;
      if (state.kind == GpuState::Kind::quarantined) ++kiln.gpus_quarantined;
      metrics.gpus.push_back(std::move(m));
    }
    // Live readings from the provider's telemetry sampler, taken now (what a provider cannot
    // read stays out of the exposition).
    if (auto sampler = supervisor.make_sampler()) {
      std::vector<int> indices;
      for (const auto& g : metrics.gpus) indices.push_back(g.index);
      KILN_TRY(auto samples, sampler->sample(indices, options.gpu_health.provider_deadline));
      for (std::size_t i = 0; i < samples.size() && i < metrics.gpus.size(); ++i)
        add_sample(metrics.gpus[i], samples[i], inventory->gpus.at(i).vendor == "nvidia");
    }
  }
  kiln.store_read = true;
  store::RunQuery query;
  query.limit = 0;
  KILN_TRY(auto runs, store.list_runs(query));
  for (const auto& run : runs) {
    ++kiln.runs_by_status[std::string(store::to_string(run.status))];
    if (store::is_terminal(run.status)) continue;
    KILN_TRY(auto jobs, store.list_jobs(run.id));
    for (const auto& job : jobs) ++kiln.jobs_by_status[std::string(store::to_string(job.status))];
  }
  KILN_TRY(auto waits, store.list_queue_times());
  for (const auto& wait : waits)
    kiln.queue_waits.push_back({.labels = fmt::format("{}", fmt::join(wait.labels, ",")),
                                .gpu_model = wait.gpu_model,
                                .seconds = static_cast<double>(wait.waited_ms) / 1000.0});
  return metrics;
}

}  // namespace kiln::engine
