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

// The GPUs a request that must wait holds on to: the set it would get on this host with every
// GPU free, except that among equally connected sets the one with the fewest `busy` GPUs wins
// (it can start soonest). Empty when the request can never be met or asks for no GPU.
std::vector<int> reserve_gpus(const Inventory& inventory, const std::set<int>& busy,
                              const GpuRequest& request);

// One scheduling pass over a FIFO queue of GPU requests: call place() for each queued job in
// queue order. Jobs are granted while GPUs allow; the first job that must wait becomes the head
// and reserves its GPUs (reserve_gpus); later jobs are placed only on GPUs outside that
// reservation (backfill), so they never delay the head, and no stream of small jobs starves a
// large one: the head's reserved GPUs only ever become free.
class QueuePass {
 public:
  // `unavailable`: GPUs leased to running jobs (of any process) or quarantined.
  QueuePass(const Inventory& inventory, std::set<int> unavailable);

  Decision place(const GpuRequest& request);

  // The head's reservation; empty while no job has had to wait in this pass.
  const std::vector<int>& reserved() const { return reserved_; }

 private:
  const Inventory& inventory_;
  std::set<int> unavailable_;  // grows with each grant of this pass
  std::set<int> blocked_;      // unavailable_ plus the head's reservation
  std::vector<int> reserved_;
  bool has_head_ = false;
};

}  // namespace kiln::gpu
