#pragma once
// NVIDIA GPUs through NVML, loaded at run time: dlopen("libnvidia-ml.so.1"). Kiln builds and runs
// without the library; a missing library, a missing symbol or a driver that is not loaded is an
// error (ErrorCode::unsupported), never a crash.
//
// Each GPU: name, UUID ("GPU-…", what CUDA_VISIBLE_DEVICES takes), memory total/used, PCI bus id
// ("00000000:18:00.0" as nvidia-smi prints it), compute capability as sm_XY, /dev/nvidia<minor>,
// NUMA node (from /sys/bus/pci/devices/<bus id>/numa_node), the driver version. Links: NVLink when
// NVML reports NVLink peer-to-peer between the pair (direct or through NVSwitch; width = the
// number of active NVLinks of the first GPU that reach the other, or all of them behind a
// switch), else the PCIe level of their common ancestor (switch, host bridge, NUMA node, system).

#include <filesystem>
#include <memory>
#include <string>

#include "kiln/gpu/gpu.h"

namespace kiln::gpu {

inline constexpr const char* k_nvml_library = "libnvidia-ml.so.1";

struct NvmlApi;

// Loads the library and resolves its symbols once per path; the handle stays loaded for the life
// of the process (an abandoned query thread may still be inside it: see call_with_deadline).
Result<std::shared_ptr<const NvmlApi>> load_nvml(const std::string& library = k_nvml_library);

// Queries NVML now, on the calling thread: init, read, shutdown.
Result<Inventory> read_nvml(const NvmlApi& api, const std::filesystem::path& sysfs_root = "/");

// Faults: uncorrected ECC errors since the driver loaded, and critical Xid events
// (nvmlEventTypeXidCriticalError) that arrived since this provider's first query; an Xid stays a
// fault of its GPU for the provider's life.
class NvmlProvider : public GpuProvider {
 public:
  explicit NvmlProvider(std::string library = k_nvml_library,
                        std::filesystem::path sysfs_root = "/");
  ~NvmlProvider() override;
  // Loads the library (first call), then queries on a worker thread within `deadline`.
  Result<Inventory> inventory(std::chrono::milliseconds deadline) override;
  std::string name() const override { return "nvml"; }

 private:
  struct XidWatch;
  std::string library_;
  std::filesystem::path sysfs_root_;
  std::shared_ptr<XidWatch> xid_;  // shared with query threads that may outlive a deadline
};

}  // namespace kiln::gpu
