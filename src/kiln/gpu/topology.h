#pragma once
// The wiring of an Inventory in the form the allocator asks about thousands of times per
// scheduling pass: the link rank of every pair in one table (Inventory::connection walks the link
// list on every call), the fabric islands (connected components of NVLink/XGMI links), and
// whether the host is "island-uniform". Built once per Inventory and reused: a QueuePass builds
// one, or takes one the caller keeps beside the inventory.
//
// Island-uniform: every island is a clique of fabric links, and the rank between two GPUs of
// different islands depends only on the two islands. NVIDIA hosts (NVSwitch islands), PCIe-only
// hosts (every GPU its own island) and the simulated inventories are; an AMD MI250 host, whose
// four GCDs form one XGMI component without every pair linked, is not. On a uniform host the GPUs
// of one island are interchangeable but for their index, so the allocator can search island by
// island instead of GPU by GPU (allocator.cpp says why that gives the same choice).

#include <cstdint>
#include <vector>

#include "kiln/gpu/gpu.h"

namespace kiln::gpu {

class Topology {
 public:
  // Reads `inventory` once; the Inventory must outlive the Topology. GPU i is inventory.gpus[i]
  // (providers number GPUs by their position); links naming GPUs outside the inventory are
  // ignored, as Inventory::connection would never be asked about them. Links and NUMA nodes are
  // copied, the GPUs themselves (memory in use) are read through inventory() at each decision:
  // build a new Topology when the set of GPUs or links changes.
  explicit Topology(const Inventory& inventory);

  const Inventory& inventory() const { return *inventory_; }
  int size() const { return size_; }

  // link_rank(inventory.connection(a, b)), for a != b.
  int rank(int a, int b) const { return ranks_[static_cast<std::size_t>(a) * size_ + b]; }

  // The fabric island of a GPU: 0 .. island_count()-1, numbered by their lowest GPU.
  int island(int gpu) const { return island_of_[gpu]; }
  int island_count() const { return static_cast<int>(island_members_.size()); }
  // The GPUs of an island, ascending.
  const std::vector<int>& members(int island) const { return island_members_[island]; }

  bool uniform() const { return uniform_; }
  // For a uniform host: the rank between any GPU of island i and any GPU of island j (0 for
  // i == j).
  int island_rank(int i, int j) const {
    return island_ranks_[static_cast<std::size_t>(i) * island_members_.size() + j];
  }

 private:
  const Inventory* inventory_;
  int size_ = 0;
  std::vector<std::uint8_t> ranks_;  // size_ × size_
  std::vector<int> island_of_;
  std::vector<std::vector<int>> island_members_;
  bool uniform_ = false;
  std::vector<std::uint8_t> island_ranks_;  // island_count² when uniform_
};

}  // namespace kiln::gpu
