#pragma once
// Large simulated hosts made in code, for the allocator's randomized tests and
// bench/gpu_alloc_bench.cpp (a 1,024-GPU inventory is 7,680 links: too big to keep as JSON).

#include "kiln/gpu/gpu.h"
#include "kiln/gpu/simulated_provider.h"

namespace kiln::gpu {

struct GeneratedShape {
  int islands = 128;         // fabric islands (one 8-GPU server board each, say)
  int island_size = 8;       // GPUs per island, all pairs linked by `fabric`
  int islands_per_numa = 4;  // islands sharing a NUMA node; across NUMA nodes: "sys"
  LinkKind fabric = LinkKind::nvlink;
};

// GPU i is in island i / island_size and NUMA node island / islands_per_numa. Links: `fabric`
// between every pair of one island; "pcie-host" between every pair of GPUs of islands 2k and
// 2k+1 of one NUMA node (a shared host bridge); other pairs are left to the NUMA rule ("numa"
// inside a NUMA node, "sys" across), as a provider that knows no better would leave them.
inline Inventory generated_inventory(const GeneratedShape& shape) {
  Inventory inventory;
  inventory.provider = "simulated";
  const int count = shape.islands * shape.island_size;
  const bool amd = shape.fabric == LinkKind::xgmi;
  for (int i = 0; i < count; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    gpu.uuid = simulated_uuid(i);
    gpu.vendor = amd ? "amd" : "nvidia";
    gpu.model = amd ? "AMD Instinct MI300X" : "NVIDIA H200";
    gpu.arch = amd ? "gfx942" : "sm_90";
    gpu.numa_node = i / shape.island_size / shape.islands_per_numa;
    gpu.memory_total_mib = amd ? 196592 : 143771;
    inventory.gpus.push_back(std::move(gpu));
  }
  for (int island = 0; island < shape.islands; ++island) {
    const int first = island * shape.island_size;
    for (int a = first; a < first + shape.island_size; ++a)
      for (int b = a + 1; b < first + shape.island_size; ++b)
        inventory.links.push_back({a, b, shape.fabric, 18});
    const bool pairs_in_numa = shape.islands_per_numa >= 2;
    if (pairs_in_numa && island % 2 == 0 && island + 1 < shape.islands &&
        island / shape.islands_per_numa == (island + 1) / shape.islands_per_numa) {
      for (int a = first; a < first + shape.island_size; ++a)
        for (int b = first + shape.island_size; b < first + 2 * shape.island_size; ++b)
          inventory.links.push_back({a, b, LinkKind::pcie_host, 16});
    }
  }
  return inventory;
}

}  // namespace kiln::gpu
