#pragma once
// What `kiln serve` reclaims at start from a server (or any kiln) that died: GPU leases whose
// owner process is gone, and, when the store shows that a server died with triggers running,
// the containers and networks of dead kiln processes. Job processes need nothing here: the dead
// server's watchdog (exec::start_orphan_reaper) killed them when it died.

#include <string>
#include <vector>

#include "kiln/engine/engine.h"

namespace kiln::server {

struct Reclaimed {
  std::vector<std::string> lines;  // one per lease, container or network reclaimed
};

// Reclaims the dead owners' GPU leases in the host store of `base` (base.host_store, else the
// default host store); with `sweep_containers`, removes dead owners' containers and networks
// through the container engine `container_engine` ("" or auto: podman, else docker; none
// installed: nothing to sweep). Failures are logged, never fatal: a server that cannot
// reclaim still serves.
Reclaimed reclaim_dead_owners(const engine::RunOptions& base, bool sweep_containers,
                              const std::string& container_engine);

}  // namespace kiln::server
