#pragma once
// AMD GPUs from the amdgpu and amdkfd sysfs trees, read under a root prefix ("/" on a host, a
// fixture tree in tests: tests/data/gpu/amd-*/, written by make_amd_fixtures.py).
//
// What is read:
//   <root>/sys/class/drm/card<N>/device/   the PCI device of each DRM card; only vendor 0x1002
//       bound to the amdgpu driver counts: uevent (PCI_SLOT_NAME, DRIVER), mem_info_vram_total
//       and mem_info_vram_used (bytes), unique_id (hex; "GPU-<id>" is the UUID ROCm tools print
//       and ROCR_VISIBLE_DEVICES accepts), product_name (FRU, server cards), numa_node, device
//   <root>/sys/class/kfd/kfd/topology/nodes/<n>/properties   "name value" lines; a GPU node is
//       tied to its card by domain + location_id (PCI bus/device/function) and gives
//       gfx_target_version (90010 → gfx90a) and drm_render_minor (/dev/dri/renderD<minor>)
//   <root>/sys/class/kfd/kfd/topology/nodes/<n>/io_links/<m>/properties   type 11 = XGMI
//   <root>/sys/module/amdgpu/version   the DKMS driver version, when there is one
// GPUs are numbered in PCI bus order. Pairs without an XGMI link get a PCIe level from the
// device paths under /sys/devices: a shared switch, a shared host bridge, the same NUMA node, or
// none of these (sys).
//
// The sampler (make_amd_sysfs_sampler) also reads the GPU memory of each process from
// <root>/proc/<pid>/fdinfo (amd_fdinfo.h).

#include <filesystem>
#include <string>

#include "kiln/gpu/gpu.h"

namespace kiln::gpu {

// "gfx" + major (decimal) + minor and stepping (one hex digit each): 90010 → "gfx90a",
// 90402 → "gfx942", 110000 → "gfx1100". Empty for 0.
std::string gfx_target_name(std::uint64_t gfx_target_version);

// Reads the tree now, on the calling thread (AmdSysfsProvider adds the deadline).
Result<Inventory> read_amd_sysfs(const std::filesystem::path& root);

// Whether <root>/sys/class/drm has at least one card driven by amdgpu (cheap: no kfd reads).
bool amd_gpus_present(const std::filesystem::path& root);

class AmdSysfsProvider : public GpuProvider {
 public:
  explicit AmdSysfsProvider(std::filesystem::path root = "/") : root_(std::move(root)) {}
  Result<Inventory> inventory(std::chrono::milliseconds deadline) override;
  std::string name() const override { return "amdgpu-sysfs"; }

 private:
  std::filesystem::path root_;
};

}  // namespace kiln::gpu
