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
//
// Every function has a form over a Topology (topology.h), for callers that decide many times
// against one inventory, and a form over the Inventory that builds the Topology for one call.

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/gpu/gpu.h"
#include "kiln/gpu/request.h"
#include "kiln/gpu/topology.h"

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
Decision choose_gpus(const Topology& topology, const std::set<int>& busy,
                     const GpuRequest& request);

// The GPUs a request that must wait holds on to: the set it would get on this host with every
// GPU free, except that among equally connected sets the one with the fewest `busy` GPUs wins
// (it can start soonest). Empty when the request can never be met or asks for no GPU.
std::vector<int> reserve_gpus(const Inventory& inventory, const std::set<int>& busy,
                              const GpuRequest& request);
std::vector<int> reserve_gpus(const Topology& topology, const std::set<int>& busy,
                              const GpuRequest& request);

// One scheduling pass over a FIFO queue of GPU requests: call place() for each queued job in
// queue order. Jobs are granted while GPUs allow; the first job that must wait becomes the head
// and reserves its GPUs (reserve_gpus); later jobs are placed only on GPUs outside that
// reservation (backfill), so they never delay the head, and no stream of small jobs starves a
// large one: the head's reserved GPUs only ever become free.
//
// place() gives the decision choose_gpus would give against the GPUs blocked so far, but a pass
// over thousands of queued jobs stays cheap: what depends only on the request (the matching GPUs,
// `never`) is worked out once per distinct request, and each request keeps a count of its usable
// GPUs that are not blocked, so a job that must wait costs a lookup. The blocked set only grows
// during a pass, so a request that had to wait waits for the rest of it.
class QueuePass {
 public:
  // `unavailable`: GPUs leased to running jobs (of any process) or quarantined. This form builds
  // its own Topology; the Inventory must outlive the pass.
  QueuePass(const Inventory& inventory, std::set<int> unavailable);
  // With a Topology the caller keeps across passes (it must outlive the pass).
  QueuePass(const Topology& topology, std::set<int> unavailable);
  ~QueuePass();
  QueuePass(const QueuePass&) = delete;
  QueuePass& operator=(const QueuePass&) = delete;

  Decision place(const GpuRequest& request);

  // The head's reservation; empty while no job has had to wait in this pass.
  const std::vector<int>& reserved() const { return reserved_; }

 private:
  struct Shape;
  struct ShapeHash {
    std::size_t operator()(const GpuRequest& request) const;
  };
  struct ShapeEqual {
    bool operator()(const GpuRequest& a, const GpuRequest& b) const;
  };

  Shape& shape_of(const GpuRequest& request);
  void block(int gpu);

  std::unique_ptr<Topology> own_topology_;  // set by the Inventory constructor
  const Topology& topology_;
  std::vector<std::uint8_t> unavailable_;  // per GPU; grows with each grant of this pass
  std::vector<std::uint8_t> blocked_;      // unavailable_ plus the head's reservation
  std::vector<int> reserved_;
  bool has_head_ = false;
  std::unordered_map<GpuRequest, std::unique_ptr<Shape>, ShapeHash, ShapeEqual> shapes_;
};

}  // namespace kiln::gpu
