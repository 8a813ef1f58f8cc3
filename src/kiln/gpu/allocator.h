#pragma once
// Which GPUs a job gets: pure logic over an Inventory, the GPUs that are busy now, and the job's
// GpuRequest. No locking and no state: the engine owns the grants and calls this under its lock.
//
// Choice, for N GPUs among the free ones that match the request:
//   1. the worst link inside the set as good as possible (one NVLink/XGMI island, then one PCIe
//      switch, one host bridge, one NUMA node: link_rank);
//   2. then the sum of link ranks over all pairs as small as possible;
//   3. then best fit: take GPUs from the fabric islands with the fewest free GPUs, so that whole
//      islands stay free for larger jobs;
//   4. then the lowest indexes (deterministic).
// A request that no state of this host could satisfy (too many GPUs, no GPU of that vendor, too
// little memory even when empty) is `never`, with the reason; one that must wait for GPUs to be
// released is `wait`.

#include <set>
#include <string>
#include <vector>

#include "kiln/gpu/gpu.h"
#include "kiln/gpu/request.h"

namespace kiln::gpu {

enum class Verdict { granted, wait, never };

struct Decision {
  Verdict verdict = Verdict::wait;
  std::vector<int> gpus;  // granted GPU indexes, ascending
  // For wait: "not now: …"; for never: "never satisfiable on this host: …".
  std::string reason;
};

// Whether a GPU could ever serve the request (vendor, model, arch, total memory).
bool gpu_matches(const GpuInfo& gpu, const GpuRequest& request);

Decision choose_gpus(const Inventory& inventory, const std::set<int>& busy,
                     const GpuRequest& request);

}  // namespace kiln::gpu
