#include "kiln/engine/host_metrics.h"

#include <unistd.h>

#include <fmt/core.h>

#include "kiln/engine/gpu_supervisor.h"
#include "kiln/store/store.h"

namespace kiln::engine {
namespace {

std::string hostname() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "";
  return buffer;
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
      // What the inventory knows today: memory. Utilization, temperature, power and energy
      // come with the telemetry sampler (docs/reports.md); until then they are left out.
      m.memory_used_mib = static_cast<double>(g.memory_used_mib);
      if (g.memory_total_mib >= g.memory_used_mib)
        m.memory_free_mib = static_cast<double>(g.memory_total_mib - g.memory_used_mib);
      const auto& state = states.at(static_cast<std::size_t>(g.index));
      m.state = std::string(gpu_state_name(state.kind));
      if (state.kind == GpuState::Kind::leased) ++kiln.gpu_leases;
      if (state.kind == GpuState::Kind::quarantined) ++kiln.gpus_quarantined;
      metrics.gpus.push_back(std::move(m));
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
  return metrics;
}

}  // namespace kiln::engine
