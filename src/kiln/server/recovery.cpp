#include "kiln/server/recovery.h"

#include <cstdlib>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "kiln/container/cleanup.h"
#include "kiln/container/engine.h"
#include "kiln/store/host_store.h"

namespace kiln::server {

Reclaimed reclaim_dead_owners(const engine::RunOptions& base, bool sweep_containers,
                              const std::string& container_engine) {
  Reclaimed reclaimed;
  if (auto host = store::open_host_store(base.host_store); !host) {
    spdlog::warn("kiln serve: cannot open the host store {}: {}", base.host_store.describe(),
                 host.error().message);
  } else if (auto leases = (*host)->reclaim_gpu_leases(); !leases) {
    spdlog::warn("kiln serve: cannot reclaim GPU leases: {}", leases.error().message);
  } else {
    for (const auto& lease : *leases)
      reclaimed.lines.push_back(fmt::format("GPU lease of {} (job {}, pid {}) reclaimed",
                                            lease.gpu_uuid, lease.job_token, lease.owner.pid));
  }
  if (sweep_containers) {
    const char* path = std::getenv("PATH");
    auto engine = container::detect_engine(container_engine, path ? path : "");
    if (!engine) {
      spdlog::debug("kiln serve: no container engine to sweep: {}", engine.error().message);
    } else {
      container::EngineCli cli(*engine);
      if (auto swept = container::sweep_orphans(cli); !swept) {
        spdlog::warn("kiln serve: cannot remove containers of dead kiln processes: {}",
                     swept.error().message);
      } else {
        for (const auto& name : swept->containers)
          reclaimed.lines.push_back(fmt::format("container {} of a dead kiln removed", name));
        for (const auto& name : swept->networks)
          reclaimed.lines.push_back(fmt::format("network {} of a dead kiln removed", name));
      }
    }
  }
  for (const auto& line : reclaimed.lines) spdlog::info("kiln serve: {}", line);
  return reclaimed;
}

}  // namespace kiln::server
