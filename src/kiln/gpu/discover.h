#pragma once
// Which GPU provider answers on this host, and its inventory (`kiln gpus`, the engine's start).

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "kiln/gpu/gpu.h"
#include "kiln/gpu/nvml_provider.h"

namespace kiln::gpu {

struct DiscoverOptions {
  std::optional<std::filesystem::path> simulate;    // --simulate-gpus SPEC.json
  std::optional<std::filesystem::path> sysfs_root;  // --sysfs-root DIR: read this amdgpu tree
  std::string nvml_library = k_nvml_library;
  std::chrono::milliseconds deadline{10000};
};

// In order: the simulated spec when given; the amdgpu tree under sysfs_root when given; NVML when
// the library loads and the driver answers; the amdgpu tree under / when it has amdgpu cards;
// else an empty inventory with provider "none" (no GPUs is not an error). NVML being absent or
// its driver not loaded (ErrorCode::unsupported) moves on to the next source; any other failure
// (a bad spec, a timeout) is returned.
Result<Inventory> discover_inventory(const DiscoverOptions& options);

// The same choice, keeping the provider that answered so that its GPUs can be asked again (live
// memory, processes, faults). provider is null when no source has GPUs (provider "none").
struct Discovered {
  std::unique_ptr<GpuProvider> provider;
  Inventory inventory;
};
Result<Discovered> discover_provider(const DiscoverOptions& options);

}  // namespace kiln::gpu
