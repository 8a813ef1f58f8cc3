#pragma once
// Removing what a dead kiln left behind. A kiln killed with -9 (or by the OOM killer, or a
// power cut of its shell) cannot remove its job containers and networks; they keep running,
// holding GPUs, memory and ports. Every object kiln creates is labelled with its owner's pid,
// start time and host (engine.h); sweep_orphans() removes the ones whose owner process is no
// longer alive on this host. `kiln run` sweeps once before its first container job starts.

#include <string>
#include <vector>

#include "kiln/container/engine.h"
#include "kiln/core/result.h"

namespace kiln::container {

struct SweepResult {
  std::vector<std::string> containers;  // names (or ids) removed
  std::vector<std::string> networks;
};

// Lists the containers and networks that carry kiln's owner labels and removes those whose
// owner (pid, start time) is not alive on this host. Objects of other hosts (a shared docker
// daemon) and of live kiln processes are left alone.
Result<SweepResult> sweep_orphans(const EngineCli& engine);

}  // namespace kiln::container
