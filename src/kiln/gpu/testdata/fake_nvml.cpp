// A stand-in for libnvidia-ml.so.1 with the entry points kiln resolves, so nvml_provider_test.cpp
// can exercise loading, enumeration, topology and the deadline without an NVIDIA GPU. It is NOT a
// check of the real ABI: tests/gpu/nvml_check.sh compares `kiln gpus --json` with nvidia-smi on
// real hardware. Four GPUs: 0 and 1 joined by 4 direct NVLinks, 2 and 3 below one PCIe switch,
// the pairs across on different sockets.
// Environment: FAKE_NVML_INIT_RC=<n> makes nvmlInit_v2 return n; FAKE_NVML_HANG_MS=<ms> makes it
// sleep first (a wedged driver). GPU 1 runs one compute process (this process, 2048 MiB); GPU 3
// reports 2 uncorrected ECC errors. FAKE_NVML_XID=<index>:<xid> makes the event set deliver that
// critical Xid event once, for a GPU registered for it.
// Telemetry: GPU i reports utilization 10*i+5 % (memory 3*i %), 40+i C, 300+i W, SM/memory clocks
// 1980/2619 MHz, an energy counter that grows by 1000 mJ on every read, clock-event reasons
// gpu_idle on GPU 0 and sw_power_cap|hw_slowdown on GPU 2. GPU 3 has no power or energy sensor
// (not supported). fake_nvml_init_count() tells how often nvmlInit_v2 was called.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <unistd.h>

#include "kiln/gpu/nvml_abi.h"

namespace nvml = kiln::gpu::nvml;

namespace {

struct FakeGpu {
  int index;
};
FakeGpu g_gpus[4] = {{0}, {1}, {2}, {3}};
constexpr unsigned k_count = 4;

int index_of(nvml::Device device) { return reinterpret_cast<FakeGpu*>(device)->index; }

void copy(char* out, unsigned size, const char* text) { std::snprintf(out, size, "%s", text); }

unsigned bus_of(int index) { return 0x18 + 0x10 * static_cast<unsigned>(index); }

void fill_pci(int index, nvml::PciInfo* pci) {
  std::memset(pci, 0, sizeof *pci);
  pci->domain = 0;
  pci->bus = bus_of(index);
  pci->device = 0;
  pci->pci_device_id = 0x233010de;
  std::snprintf(pci->bus_id, sizeof pci->bus_id, "00000000:%02X:00.0", bus_of(index));
  std::snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "0000:%02X:00.0", bus_of(index));
}

}  // namespace

extern "C" {

namespace {
int g_inits = 0;
unsigned long long g_energy[4] = {};
}  // namespace

__attribute__((visibility("default"))) int fake_nvml_init_count() { return g_inits; }

__attribute__((visibility("default"))) nvml::Return nvmlInit_v2() {
  ++g_inits;
  if (const char* hang = std::getenv("FAKE_NVML_HANG_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(hang)));
  if (const char* rc = std::getenv("FAKE_NVML_INIT_RC")) return std::atoi(rc);
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlShutdown() { return nvml::k_success; }

__attribute__((visibility("default"))) const char* nvmlErrorString(nvml::Return rc) {
  switch (rc) {
    case nvml::k_success:
      return "Success";
    case nvml::k_error_driver_not_loaded:
      return "Driver Not Loaded";
    case nvml::k_error_not_supported:
      return "Not Supported";
    default:
      return "Unknown Error";
  }
}

__attribute__((visibility("default"))) nvml::Return nvmlSystemGetDriverVersion(char* out,
                                                                               unsigned size) {
  copy(out, size, "550.54.15");
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetCount_v2(unsigned* count) {
  *count = k_count;
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetHandleByIndex_v2(
    unsigned index, nvml::Device* device) {
  if (index >= k_count) return nvml::k_error_invalid_argument;
  *device = reinterpret_cast<nvml::Device>(&g_gpus[index]);
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetName(nvml::Device device,
                                                                      char* out, unsigned size) {
  copy(out, size, index_of(device) < 2 ? "NVIDIA H100 80GB HBM3" : "NVIDIA L40S");
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetUUID(nvml::Device device,
                                                                      char* out, unsigned size) {
  char text[64];
  std::snprintf(text, sizeof text, "GPU-fa4e0000-0000-0000-0000-00000000000%d", index_of(device));
  copy(out, size, text);
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetMemoryInfo(nvml::Device device,
                                                                            nvml::Memory* memory) {
  memory->total = 85520809984ULL;  // 81559 MiB
  memory->used = static_cast<unsigned long long>(index_of(device)) * 1024 * 1024 * 1024;
  memory->free = memory->total - memory->used;
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetPciInfo_v3(nvml::Device device,
                                                                            nvml::PciInfo* pci) {
  fill_pci(index_of(device), pci);
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetCudaComputeCapability(
    nvml::Device device, int* major, int* minor) {
  *major = index_of(device) < 2 ? 9 : 8;
  *minor = index_of(device) < 2 ? 0 : 9;
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetMinorNumber(nvml::Device device,
                                                                             unsigned* minor) {
  *minor = static_cast<unsigned>(index_of(device));
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetP2PStatus(nvml::Device a,
                                                                           nvml::Device b, int caps,
                                                                           int* status) {
  bool pair01 = (index_of(a) + index_of(b) == 1);
  *status = (caps == nvml::k_p2p_caps_index_nvlink && pair01) ? nvml::k_p2p_status_ok : 4;
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetTopologyCommonAncestor(
    nvml::Device a, nvml::Device b, int* level) {
  int x = index_of(a), y = index_of(b);
  if (x / 2 == y / 2) {
    *level = nvml::k_topology_single;
  } else {
    *level = nvml::k_topology_system;
  }
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetNvLinkState(nvml::Device device,
                                                                             unsigned link,
                                                                             int* active) {
  if (link >= nvml::k_max_nvlinks) return nvml::k_error_invalid_argument;
  *active = (index_of(device) < 2 && link < 4) ? nvml::k_feature_enabled : 0;
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetNvLinkRemotePciInfo_v2(
    nvml::Device device, unsigned link, nvml::PciInfo* pci) {
  if (index_of(device) >= 2 || link >= 4) return nvml::k_error_not_supported;
  fill_pci(1 - index_of(device), pci);
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetComputeRunningProcesses_v3(
    nvml::Device device, unsigned* count, nvml::ProcessInfo* infos) {
  if (index_of(device) != 1) {
    *count = 0;
    return nvml::k_success;
  }
  if (*count < 1) {
    *count = 1;
    return nvml::k_error_insufficient_size;
  }
  *count = 1;
  infos[0] = {static_cast<unsigned>(getpid()), 2048ULL * 1024 * 1024, 0, 0};
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetTotalEccErrors(
    nvml::Device device, int error_type, int counter_type, unsigned long long* count) {
  if (error_type != nvml::k_memory_error_uncorrected ||
      counter_type != nvml::k_ecc_counter_volatile)
    return nvml::k_error_invalid_argument;
  *count = index_of(device) == 3 ? 2 : 0;
  return nvml::k_success;
}

namespace {
struct FakeEventSet {
  bool registered[k_count] = {};
  bool delivered = false;
};
}  // namespace

__attribute__((visibility("default"))) nvml::Return nvmlEventSetCreate(nvml::EventSet* set) {
  *set = reinterpret_cast<nvml::EventSet>(new FakeEventSet);
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceRegisterEvents(
    nvml::Device device, unsigned long long types, nvml::EventSet set) {
  if (types != nvml::k_event_xid_critical_error) return nvml::k_error_not_supported;
  reinterpret_cast<FakeEventSet*>(set)->registered[index_of(device)] = true;
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlEventSetWait_v2(nvml::EventSet set,
                                                                        nvml::EventData* data,
                                                                        unsigned timeout_ms) {
  (void)timeout_ms;
  auto* fake = reinterpret_cast<FakeEventSet*>(set);
  const char* xid = std::getenv("FAKE_NVML_XID");
  int index = 0;
  unsigned long long code = 0;
  if (fake->delivered || !xid || std::sscanf(xid, "%d:%llu", &index, &code) != 2 || index < 0 ||
      index >= static_cast<int>(k_count) || !fake->registered[index])
    return nvml::k_error_timeout;
  fake->delivered = true;
  *data = {reinterpret_cast<nvml::Device>(&g_gpus[index]), nvml::k_event_xid_critical_error, code,
           0, 0};
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlEventSetFree(nvml::EventSet set) {
  delete reinterpret_cast<FakeEventSet*>(set);
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetUtilizationRates(
    nvml::Device device, nvml::Utilization* utilization) {
  utilization->gpu = 10 * static_cast<unsigned>(index_of(device)) + 5;
  utilization->memory = 3 * static_cast<unsigned>(index_of(device));
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetTemperature(nvml::Device device,
                                                                             int sensor,
                                                                             unsigned* celsius) {
  if (sensor != nvml::k_temperature_gpu) return nvml::k_error_invalid_argument;
  *celsius = 40 + static_cast<unsigned>(index_of(device));
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetPowerUsage(nvml::Device device,
                                                                            unsigned* milliwatts) {
  if (index_of(device) == 3) return nvml::k_error_not_supported;
  *milliwatts = 300000 + 1000 * static_cast<unsigned>(index_of(device));
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetTotalEnergyConsumption(
    nvml::Device device, unsigned long long* millijoules) {
  if (index_of(device) == 3) return nvml::k_error_not_supported;
  g_energy[index_of(device)] += 1000;
  *millijoules = g_energy[index_of(device)];
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetClockInfo(nvml::Device device,
                                                                           int type,
                                                                           unsigned* mhz) {
  (void)device;
  if (type == nvml::k_clock_sm)
    *mhz = 1980;
  else if (type == nvml::k_clock_mem)
    *mhz = 2619;
  else
    return nvml::k_error_invalid_argument;
  return nvml::k_success;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetCurrentClocksEventReasons(
    nvml::Device device, unsigned long long* reasons) {
  int index = index_of(device);
  *reasons = index == 0 ? 0x1ULL : index == 2 ? (0x4ULL | 0x8ULL) : 0;
  return nvml::k_success;
}

}  // extern "C"
