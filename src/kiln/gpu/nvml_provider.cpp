#include "kiln/gpu/nvml_provider.h"

#include <dlfcn.h>

#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

#include "kiln/gpu/deadline.h"
#include "kiln/gpu/nvml_abi.h"
#include "kiln/gpu/nvml_api.h"

namespace kiln::gpu {

namespace {

template <class Fn>
void resolve(void* handle, const char* name, Fn& target) {
  target = reinterpret_cast<Fn>(dlsym(handle, name));
}

std::string buffer_string(const char* buffer, std::size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

int read_numa_node(const std::filesystem::path& sysfs_root, const nvml::PciInfo& pci) {
  // sysfs names PCI devices with a 4-digit domain and lowercase hex; a GPU is function 0.
  auto name = fmt::format("{:04x}:{:02x}:{:02x}.0", pci.domain, pci.bus, pci.device);
  std::ifstream in(sysfs_root / "sys/bus/pci/devices" / name / "numa_node");
  int node = -1;
  if (!(in >> node) || node < -1) return -1;
  return node;
}

// Faults NVML reports: uncorrected ECC errors since the driver loaded (a GPU without ECC, or
// with it disabled, reports none).
std::vector<std::string> read_faults(const NvmlApi& api, nvml::Device device) {
  std::vector<std::string> faults;
  unsigned long long uncorrected = 0;
  if (api.get_ecc_errors &&
      api.get_ecc_errors(device, nvml::k_memory_error_uncorrected, nvml::k_ecc_counter_volatile,
                         &uncorrected) == nvml::k_success &&
      uncorrected > 0)
    faults.push_back(fmt::format("{} uncorrected ECC errors since the driver loaded", uncorrected));
  return faults;
}

LinkKind kind_of_ancestor(int level) {
  if (level <= nvml::k_topology_multiple) return LinkKind::pcie_switch;
  if (level <= nvml::k_topology_hostbridge) return LinkKind::pcie_host;
  if (level <= nvml::k_topology_node) return LinkKind::numa;
  return LinkKind::sys;
}

}  // namespace

// The compute processes on a device; none when the query is not supported.
std::vector<GpuProcess> read_nvml_processes(const NvmlApi& api, nvml::Device device) {
  std::vector<GpuProcess> processes;
  if (!api.get_processes) return processes;
  std::vector<nvml::ProcessInfo> infos(16);
  unsigned count = static_cast<unsigned>(infos.size());
  auto rc = api.get_processes(device, &count, infos.data());
  for (int attempt = 0; rc == nvml::k_error_insufficient_size && attempt < 3; ++attempt) {
    infos.resize(count + 16);  // more processes started between the calls: ask again
    count = static_cast<unsigned>(infos.size());
    rc = api.get_processes(device, &count, infos.data());
  }
  if (rc != nvml::k_success) return processes;
  for (unsigned i = 0; i < count && i < infos.size(); ++i) {
    auto bytes = infos[i].used_gpu_memory;
    processes.push_back({static_cast<int>(infos[i].pid),
                         bytes == nvml::k_value_not_available ? 0 : bytes / (1024 * 1024)});
  }
  return processes;
}

Result<std::shared_ptr<const NvmlApi>> load_nvml(const std::string& library) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const NvmlApi>> loaded;
  std::lock_guard lock(mutex);
  if (auto it = loaded.find(library); it != loaded.end()) return it->second;

  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return fail(ErrorCode::unsupported, "NVML is not available: {}",
                why ? why : library + ": cannot be loaded");
  }
  auto api = std::make_shared<NvmlApi>();
  api->library = library;
  resolve(handle, "nvmlInit_v2", api->init);
  resolve(handle, "nvmlShutdown", api->shutdown);
  resolve(handle, "nvmlErrorString", api->error_string);
  resolve(handle, "nvmlDeviceGetCount_v2", api->get_count);
  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", api->get_handle);
  resolve(handle, "nvmlDeviceGetName", api->get_name);
  resolve(handle, "nvmlDeviceGetUUID", api->get_uuid);
  resolve(handle, "nvmlDeviceGetMemoryInfo", api->get_memory);
  resolve(handle, "nvmlDeviceGetPciInfo_v3", api->get_pci);
  if (!api->get_pci) resolve(handle, "nvmlDeviceGetPciInfo_v2", api->get_pci);  // same layout
  resolve(handle, "nvmlDeviceGetCudaComputeCapability", api->get_compute_capability);
  resolve(handle, "nvmlSystemGetDriverVersion", api->get_driver_version);
  resolve(handle, "nvmlDeviceGetMinorNumber", api->get_minor);
  resolve(handle, "nvmlDeviceGetTopologyCommonAncestor", api->get_common_ancestor);
  resolve(handle, "nvmlDeviceGetP2PStatus", api->get_p2p_status);
  resolve(handle, "nvmlDeviceGetNvLinkState", api->get_nvlink_state);
  resolve(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api->get_nvlink_remote_pci);
  resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", api->get_processes);
  resolve(handle, "nvmlDeviceGetTotalEccErrors", api->get_ecc_errors);
  resolve(handle, "nvmlEventSetCreate", api->event_set_create);
  resolve(handle, "nvmlDeviceRegisterEvents", api->register_events);
  resolve(handle, "nvmlEventSetWait_v2", api->event_set_wait);
  resolve(handle, "nvmlEventSetFree", api->event_set_free);
  resolve(handle, "nvmlDeviceGetUtilizationRates", api->get_utilization);
  resolve(handle, "nvmlDeviceGetTemperature", api->get_temperature);
  resolve(handle, "nvmlDeviceGetPowerUsage", api->get_power);
  resolve(handle, "nvmlDeviceGetTotalEnergyConsumption", api->get_energy);
  resolve(handle, "nvmlDeviceGetClockInfo", api->get_clock);
  resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons", api->get_clock_reasons);
  if (!api->get_clock_reasons)  // drivers before r535: the same mask under its older name
    resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", api->get_clock_reasons);

  std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", api->init != nullptr},
      {"nvmlShutdown", api->shutdown != nullptr},
      {"nvmlErrorString", api->error_string != nullptr},
      {"nvmlDeviceGetCount_v2", api->get_count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", api->get_handle != nullptr},
      {"nvmlDeviceGetName", api->get_name != nullptr},
      {"nvmlDeviceGetUUID", api->get_uuid != nullptr},
      {"nvmlDeviceGetMemoryInfo", api->get_memory != nullptr},
      {"nvmlDeviceGetPciInfo_v3", api->get_pci != nullptr},
      {"nvmlDeviceGetCudaComputeCapability", api->get_compute_capability != nullptr},
      {"nvmlSystemGetDriverVersion", api->get_driver_version != nullptr},
  };
  for (auto [symbol, found] : required) {
    if (!found) {
      dlclose(handle);
      return fail(ErrorCode::unsupported, "NVML is not available: {} has no symbol {}", library,
                  symbol);
    }
  }
  // Never dlclose'd from here on: a query thread abandoned at its deadline may still run in it.
  loaded[library] = api;
  return std::shared_ptr<const NvmlApi>(api);
}

Result<Inventory> read_nvml(const NvmlApi& api, const std::filesystem::path& sysfs_root) {
  if (auto rc = api.init(); rc != nvml::k_success)
    return fail(ErrorCode::unsupported, "NVML cannot start: {}", api.describe(rc));
  // Shut down on every path out (NVML counts inits and shutdowns).
  struct Shutdown {
    const NvmlApi& api;
    ~Shutdown() { api.shutdown(); }
  } shutdown{api};

  auto check = [&](nvml::Return rc, std::string_view what) -> Status {
    if (rc == nvml::k_success) return {};
    return fail(ErrorCode::io_error, "NVML: {}: {}", what, api.describe(rc));
  };

  Inventory inventory;
  inventory.provider = "nvml";
  char version[nvml::k_version_buffer] = {};
  KILN_TRY_VOID(check(api.get_driver_version(version, sizeof version), "driver version"));
  unsigned count = 0;
  KILN_TRY_VOID(check(api.get_count(&count), "device count"));

  std::vector<nvml::Device> devices(count);
  std::vector<nvml::PciInfo> pcis(count);
  for (unsigned i = 0; i < count; ++i) {
    auto where = fmt::format("GPU {}", i);
    KILN_TRY_VOID(check(api.get_handle(i, &devices[i]), where + ": handle"));
    nvml::Device device = devices[i];
    GpuInfo gpu;
    gpu.index = static_cast<int>(i);
    gpu.vendor = "nvidia";
    gpu.driver_version = buffer_string(version, sizeof version);
    char name[nvml::k_name_buffer] = {};
    KILN_TRY_VOID(check(api.get_name(device, name, sizeof name), where + ": name"));
    gpu.model = buffer_string(name, sizeof name);
    char uuid[nvml::k_uuid_buffer] = {};
    KILN_TRY_VOID(check(api.get_uuid(device, uuid, sizeof uuid), where + ": UUID"));
    gpu.uuid = buffer_string(uuid, sizeof uuid);
    nvml::Memory memory{};
    KILN_TRY_VOID(check(api.get_memory(device, &memory), where + ": memory"));
    gpu.memory_total_mib = memory.total / (1024 * 1024);
    gpu.memory_used_mib = memory.used / (1024 * 1024);
    nvml::PciInfo& pci = pcis[i];
    std::memset(&pci, 0, sizeof pci);
    KILN_TRY_VOID(check(api.get_pci(device, &pci), where + ": PCI info"));
    gpu.pci_bus_id = buffer_string(pci.bus_id, sizeof pci.bus_id);
    gpu.numa_node = read_numa_node(sysfs_root, pci);
    int major = 0, minor = 0;
    KILN_TRY_VOID(
        check(api.get_compute_capability(device, &major, &minor), where + ": compute capability"));
    gpu.arch = fmt::format("sm_{}{}", major, minor);
    unsigned device_minor = 0;
    if (api.get_minor && api.get_minor(device, &device_minor) == nvml::k_success)
      gpu.device_nodes.push_back(fmt::format("/dev/nvidia{}", device_minor));
    gpu.processes = read_nvml_processes(api, device);
    gpu.faults = read_faults(api, device);
    inventory.gpus.push_back(std::move(gpu));
  }

  // NVLinks per GPU: how many are active, and how many reach each peer directly.
  std::vector<int> active_links(count, 0);
  std::vector<std::map<unsigned, int>> links_to(count);
  if (api.get_nvlink_state) {
    for (unsigned i = 0; i < count; ++i) {
      for (unsigned link = 0; link < nvml::k_max_nvlinks; ++link) {
        int state = 0;
        if (api.get_nvlink_state(devices[i], link, &state) != nvml::k_success) continue;
        if (state != nvml::k_feature_enabled) continue;
        ++active_links[i];
        nvml::PciInfo remote{};
        if (!api.get_nvlink_remote_pci ||
            api.get_nvlink_remote_pci(devices[i], link, &remote) != nvml::k_success)
          continue;
        auto remote_bus = buffer_string(remote.bus_id, sizeof remote.bus_id);
        for (unsigned j = 0; j < count; ++j)
          if (j != i && remote_bus == inventory.gpus[j].pci_bus_id) ++links_to[i][j];
      }
    }
  }
  for (unsigned a = 0; a < count; ++a) {
    for (unsigned b = a + 1; b < count; ++b) {
      GpuLink link{static_cast<int>(a), static_cast<int>(b), LinkKind::sys, 0};
      int p2p = -1;
      bool nvlink = api.get_p2p_status &&
                    api.get_p2p_status(devices[a], devices[b], nvml::k_p2p_caps_index_nvlink,
                                       &p2p) == nvml::k_success &&
                    p2p == nvml::k_p2p_status_ok;
      int direct = links_to[a].contains(b) ? links_to[a][b] : 0;
      if (nvlink || direct > 0) {
        link.kind = LinkKind::nvlink;
        link.width = direct > 0 ? direct : active_links[a];  // behind NVSwitch: all its links
      } else if (int level = 0;
                 api.get_common_ancestor &&
                 api.get_common_ancestor(devices[a], devices[b], &level) == nvml::k_success) {
        link.kind = kind_of_ancestor(level);
      } else {
        continue;  // unknown: Inventory::connection falls back to NUMA nodes
      }
      inventory.links.push_back(link);
    }
  }
  return inventory;
}

// Xid events arrive on an NVML event set, which lives only while NVML is initialised: the watch
// holds one init of its own for the provider's life, registers every GPU for critical Xid
// events once, and drains what arrived on each query. An Xid is remembered for the life of the
// provider (the event is gone once read), so the GPU keeps the fault.
struct NvmlProvider::XidWatch {
  std::mutex mutex;
  std::shared_ptr<const NvmlApi> api;
  nvml::EventSet set = nullptr;
  bool started = false;
  std::map<std::string, std::vector<std::string>> faults;  // by GPU UUID

  ~XidWatch() {
    if (!set) return;
    if (api->event_set_free) api->event_set_free(set);
    api->shutdown();
  }

  void poll(Inventory& inventory) {
    std::lock_guard lock(mutex);
    if (!api->event_set_create || !api->register_events || !api->event_set_wait) return;
    unsigned count = 0;
    if (!started) {
      started = true;
      if (api->init() != nvml::k_success) return;
      if (api->event_set_create(&set) != nvml::k_success) {
        set = nullptr;
        api->shutdown();
        return;
      }
      if (api->get_count(&count) == nvml::k_success)
        for (unsigned i = 0; i < count; ++i) {
          nvml::Device device{};
          // Not every GPU (or VM) supports the event: such a GPU simply reports no Xid.
          if (api->get_handle(i, &device) == nvml::k_success)
            (void)api->register_events(device, nvml::k_event_xid_critical_error, set);
        }
    }
    if (!set) return;
    for (int drained = 0; drained < 1024; ++drained) {
      nvml::EventData event{};
      if (api->event_set_wait(set, &event, 0) != nvml::k_success) break;
      if (!(event.event_type & nvml::k_event_xid_critical_error)) continue;
      char uuid[nvml::k_uuid_buffer] = {};
      if (api->get_uuid(event.device, uuid, sizeof uuid) != nvml::k_success) continue;
      faults[buffer_string(uuid, sizeof uuid)].push_back(
          fmt::format("Xid {} (a critical error the driver reported)", event.event_data));
    }
    for (auto& gpu : inventory.gpus)
      if (auto it = faults.find(gpu.uuid); it != faults.end())
        gpu.faults.insert(gpu.faults.end(), it->second.begin(), it->second.end());
  }
};

NvmlProvider::NvmlProvider(std::string library, std::filesystem::path sysfs_root)
    : library_(std::move(library)), sysfs_root_(std::move(sysfs_root)) {}

NvmlProvider::~NvmlProvider() = default;

Result<Inventory> NvmlProvider::inventory(std::chrono::milliseconds deadline) {
  // dlopen runs the library's constructors only; it does not talk to the driver, so it is done
  // here, and only the queries run under the deadline.
  KILN_TRY(auto api, load_nvml(library_));
  if (!xid_) {
    xid_ = std::make_shared<XidWatch>();
    xid_->api = api;
  }
  return call_with_deadline<Inventory>(
      [api, root = sysfs_root_, xid = xid_]() -> Result<Inventory> {
        KILN_TRY(auto inventory, read_nvml(*api, root));
        xid->poll(inventory);
        return inventory;
      },
      deadline, "NVML");
}

}  // namespace kiln::gpu
