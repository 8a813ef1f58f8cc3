#pragma once
// The GPU vocabulary of Kiln: what a host's GPUs are (GpuInfo), how they are wired to each other
// (GpuLink), and the one interface every source of that knowledge implements (GpuProvider):
// NVML, the amdgpu sysfs tree, or a simulated inventory read from JSON (DESIGN.md "GPU requests").

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::gpu {

// A process using a GPU now, as the driver reports it (NVML's running compute processes).
struct GpuProcess {
  int pid = 0;
  std::uint64_t used_mib = 0;

  friend bool operator==(const GpuProcess&, const GpuProcess&) = default;
};

struct GpuInfo {
  int index = 0;           // 0-based, in the provider's order (PCI bus order for NVML and sysfs)
  std::string uuid;        // "GPU-…": what CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES accept
  std::string vendor;      // "nvidia" or "amd"
  std::string model;       // "NVIDIA H200", "AMD Instinct MI250X"
  std::string arch;        // "sm_90" (compute capability) or "gfx90a" (gfx target)
  std::string pci_bus_id;  // as the vendor's tools print it; empty when unknown
  int numa_node = -1;      // -1: unknown or not a NUMA machine
  std::uint64_t memory_total_mib = 0;
  std::uint64_t memory_used_mib = 0;
  // The device files a container needs for this GPU alone (/dev/nvidia0, /dev/dri/renderD128).
  // Host-wide nodes (/dev/nvidiactl, /dev/kfd) are not listed: every grant needs them.
  std::vector<std::string> device_nodes;
  std::string driver_version;
  // Processes on the GPU now, where the provider can tell (NVML; empty for amdgpu sysfs).
  std::vector<GpuProcess> processes;
  // What the provider reports wrong with the GPU now, one line each ("2 uncorrected ECC errors
  // since the driver loaded"); empty when healthy. A fault quarantines the GPU.
  std::vector<std::string> faults;
};

// How two GPUs talk to each other, best first. The order is the allocator's preference.
enum class LinkKind {
  nvlink,       // direct GPU-GPU fabric (NVLink, possibly through NVSwitch)
  xgmi,         // AMD's GPU-GPU fabric (Infinity Fabric)
  pcie_switch,  // PCIe, below a common switch (no host bridge crossed)
  pcie_host,    // PCIe, through one host bridge
  numa,         // across host bridges within one NUMA node
  sys,          // across NUMA nodes (the CPU interconnect); also "unknown"
};

// 0 for the GPU fabrics (nvlink, xgmi are equally good), growing as the path gets worse.
int link_rank(LinkKind kind);
// The spelling of DESIGN.md's inventory: "nvlink", "xgmi", "pcie-switch", "pcie-host", "numa",
// "sys".
std::string_view link_kind_name(LinkKind kind);
std::optional<LinkKind> parse_link_kind(std::string_view name);

// An undirected connection; `width` is the number of lanes/links where the provider knows it
// (NVLink links, PCIe lanes), else 0.
struct GpuLink {
  int a = 0;
  int b = 0;
  LinkKind kind = LinkKind::sys;
  int width = 0;
};

struct Inventory {
  std::vector<GpuInfo> gpus;
  std::vector<GpuLink> links;
  std::string provider;  // "nvml", "amdgpu-sysfs" or "simulated"

  // The best connection between GPUs a and b: a listed link, else "numa" when both sit on the
  // same known NUMA node, else "sys".
  LinkKind connection(int a, int b) const;
  const GpuLink* find_link(int a, int b) const;
};

// A source of GPU inventory. Every call takes a deadline: a wedged driver (a GPU that fell off
// the bus, NVML stuck in the kernel) must not hang kiln. Implementations run the query on a
// worker thread (see call_with_deadline) and return ErrorCode::timeout when it does not finish.
class GpuProvider {
 public:
  virtual ~GpuProvider() = default;
  virtual Result<Inventory> inventory(std::chrono::milliseconds deadline) = 0;
  // "nvml", "amdgpu-sysfs", "simulated".
  virtual std::string name() const = 0;
};

// The `kiln gpus --json` schema: {provider, gpus: [{index, uuid, vendor, model, arch, pci_bus_id,
// numa_node, memory_total_mib, memory_used_mib, device_nodes, driver_version, processes: [{pid,
// used_mib}], faults: [...]}], links: [{a, b, kind, width}]}.
nlohmann::json inventory_to_json(const Inventory& inventory);

}  // namespace kiln::gpu
