#pragma once
// The small part of NVML's C ABI that kiln uses, written from NVIDIA's NVML API reference
// (docs.nvidia.com/deploy/nvml-api): kiln loads libnvidia-ml.so.1 at run time with dlopen, so it
// builds and runs on machines without the NVIDIA driver and needs no NVIDIA header. Only stable,
// versioned entry points are used (the _v2/_v3 names the header maps the plain names to).
// Internal to the gpu module (nvml_provider.cpp and the test library testdata/fake_nvml.cpp).

namespace kiln::gpu::nvml {

using Return = int;  // nvmlReturn_t
constexpr Return k_success = 0;
constexpr Return k_error_uninitialized = 1;
constexpr Return k_error_invalid_argument = 2;
constexpr Return k_error_not_supported = 3;
constexpr Return k_error_driver_not_loaded = 9;
constexpr Return k_error_insufficient_size = 7;
constexpr Return k_error_timeout = 10;
constexpr Return k_error_gpu_is_lost = 15;

using Device = struct DeviceOpaque*;  // nvmlDevice_t

// Buffer sizes the reference guarantees to be large enough.
constexpr unsigned k_name_buffer = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned k_uuid_buffer = 96;     // NVML_DEVICE_UUID_V2_BUFFER_SIZE is 96
constexpr unsigned k_version_buffer = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
constexpr unsigned k_max_nvlinks = 18;     // NVML_NVLINK_MAX_LINKS (Hopper)

struct Memory {  // nvmlMemory_t (v1): bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct PciInfo {           // nvmlPciInfo_t
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;  // device id << 16 | vendor id
  unsigned int pci_subsystem_id;
  char bus_id[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:18:00.0"
};

struct ProcessInfo {  // nvmlProcessInfo_t (v2 layout), what ..._v3 process queries fill
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes; NVML_VALUE_NOT_AVAILABLE (~0ULL) if unknown
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr unsigned long long k_value_not_available = ~0ULL;

constexpr int k_memory_error_uncorrected = 1;  // nvmlMemoryErrorType_t
constexpr int k_ecc_counter_volatile = 0;      // nvmlEccCounterType_t: since the driver loaded

using EventSet = struct EventSetOpaque*;  // nvmlEventSet_t
struct EventData {                        // nvmlEventData_t
  Device device;
  unsigned long long event_type;
  unsigned long long event_data;  // for Xid events: the Xid
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr unsigned long long k_event_xid_critical_error = 0x8;  // nvmlEventTypeXidCriticalError

// nvmlGpuTopologyLevel_t
constexpr int k_topology_internal = 0;
constexpr int k_topology_single = 10;
constexpr int k_topology_multiple = 20;
constexpr int k_topology_hostbridge = 30;
constexpr int k_topology_node = 40;
constexpr int k_topology_system = 50;

constexpr int k_p2p_caps_index_nvlink = 2;  // nvmlGpuP2PCapsIndex_t NVML_P2P_CAPS_INDEX_NVLINK
constexpr int k_p2p_status_ok = 0;          // nvmlGpuP2PStatus_t NVML_P2P_STATUS_OK
constexpr int k_feature_enabled = 1;        // nvmlEnableState_t NVML_FEATURE_ENABLED

// Telemetry (telemetry.h), from the same reference.
struct Utilization {  // nvmlUtilization_t: percent of the last sample period
  unsigned int gpu;
  unsigned int memory;
};
constexpr int k_temperature_gpu = 0;  // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU
constexpr int k_clock_sm = 1;         // nvmlClockType_t NVML_CLOCK_SM
constexpr int k_clock_mem = 2;        // nvmlClockType_t NVML_CLOCK_MEM

extern "C" {
using InitFn = Return (*)();                                    // nvmlInit_v2
using ShutdownFn = Return (*)();                                // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                  // nvmlErrorString
using GetCountFn = Return (*)(unsigned int*);                   // nvmlDeviceGetCount_v2
using GetHandleByIndexFn = Return (*)(unsigned int, Device*);   // ..._GetHandleByIndex_v2
using GetStringFn = Return (*)(Device, char*, unsigned int);    // GetName, GetUUID
using GetMemoryInfoFn = Return (*)(Device, Memory*);            // nvmlDeviceGetMemoryInfo
using GetPciInfoFn = Return (*)(Device, PciInfo*);              // nvmlDeviceGetPciInfo_v3
using GetComputeCapabilityFn = Return (*)(Device, int*, int*);  // ..GetCudaComputeCapability
using GetMinorNumberFn = Return (*)(Device, unsigned int*);     // nvmlDeviceGetMinorNumber
using SystemGetDriverVersionFn = Return (*)(char*, unsigned int);
using GetTopologyCommonAncestorFn = Return (*)(Device, Device, int*);
using GetP2PStatusFn = Return (*)(Device, Device, int, int*);  // nvmlDeviceGetP2PStatus
using GetNvLinkStateFn = Return (*)(Device, unsigned int, int*);
using GetNvLinkRemotePciInfoFn = Return (*)(Device, unsigned int, PciInfo*);  // _v2
// nvmlDeviceGetComputeRunningProcesses_v3
using GetRunningProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);
// nvmlDeviceGetTotalEccErrors(device, error type, counter type, count)
using GetTotalEccErrorsFn = Return (*)(Device, int, int, unsigned long long*);
using EventSetCreateFn = Return (*)(EventSet*);                             // nvmlEventSetCreate
using RegisterEventsFn = Return (*)(Device, unsigned long long, EventSet);  // ..RegisterEvents
using EventSetWaitFn = Return (*)(EventSet, EventData*, unsigned int);      // nvmlEventSetWait_v2
using EventSetFreeFn = Return (*)(EventSet);                                // nvmlEventSetFree
using GetUtilizationRatesFn = Return (*)(Device, Utilization*);             // ..GetUtilizationRates
using GetTemperatureFn = Return (*)(Device, int, unsigned int*);            // ..GetTemperature (C)
using GetPowerUsageFn = Return (*)(Device, unsigned int*);                  // ..GetPowerUsage (mW)
// nvmlDeviceGetTotalEnergyConsumption: mJ since the driver loaded (Volta and later)
using GetTotalEnergyFn = Return (*)(Device, unsigned long long*);
using GetClockInfoFn = Return (*)(Device, int, unsigned int*);  // ..GetClockInfo (MHz)
// nvmlDeviceGetCurrentClocksEventReasons (r535+), else ..GetCurrentClocksThrottleReasons:
// the same bit mask under its older name.
using GetClocksEventReasonsFn = Return (*)(Device, unsigned long long*);
}

}  // namespace kiln::gpu::nvml
