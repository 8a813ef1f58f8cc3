#include "kiln/gpu/discover.h"

#include "kiln/gpu/amd_sysfs_provider.h"
#include "kiln/gpu/simulated_provider.h"

namespace kiln::gpu {

namespace {

Result<Discovered> ask(std::unique_ptr<GpuProvider> provider, std::chrono::milliseconds deadline) {
  KILN_TRY(auto inventory, provider->inventory(deadline));
  return Discovered{std::move(provider), std::move(inventory)};
}

}  // namespace

Result<Discovered> discover_provider(const DiscoverOptions& options) {
  if (options.simulate)
    return ask(std::make_unique<SimulatedProvider>(*options.simulate), options.deadline);
  if (options.sysfs_root)
    return ask(std::make_unique<AmdSysfsProvider>(*options.sysfs_root), options.deadline);
  auto nvml = ask(std::make_unique<NvmlProvider>(options.nvml_library), options.deadline);
  if (nvml && !nvml->inventory.gpus.empty()) return nvml;
  if (!nvml && nvml.error().code != ErrorCode::unsupported) return nvml;
  if (amd_gpus_present("/")) return ask(std::make_unique<AmdSysfsProvider>("/"), options.deadline);
  Discovered none;
  none.inventory.provider = "none";
  return none;
}

Result<Inventory> discover_inventory(const DiscoverOptions& options) {
  KILN_TRY(auto discovered, discover_provider(options));
  return std::move(discovered.inventory);
}

}  // namespace kiln::gpu
