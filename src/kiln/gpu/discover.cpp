#include "kiln/gpu/discover.h"

#include "kiln/gpu/amd_sysfs_provider.h"
#include "kiln/gpu/simulated_provider.h"

namespace kiln::gpu {

Result<Inventory> discover_inventory(const DiscoverOptions& options) {
  if (options.simulate) return SimulatedProvider(*options.simulate).inventory(options.deadline);
  if (options.sysfs_root) return AmdSysfsProvider(*options.sysfs_root).inventory(options.deadline);
  auto nvml = NvmlProvider(options.nvml_library).inventory(options.deadline);
  if (nvml && !nvml->gpus.empty()) return nvml;
  if (!nvml && nvml.error().code != ErrorCode::unsupported) return nvml;
  if (amd_gpus_present("/")) return AmdSysfsProvider("/").inventory(options.deadline);
  Inventory none;
  none.provider = "none";
  return none;
}

}  // namespace kiln::gpu
