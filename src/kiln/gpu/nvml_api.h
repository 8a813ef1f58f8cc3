#pragma once
// The loaded NVML entry points (load_nvml), shared by the inventory (nvml_provider.cpp) and the
// sampler (nvml_sampler.cpp). Internal to the gpu module.

#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/gpu/gpu.h"
#include "kiln/gpu/nvml_abi.h"

namespace kiln::gpu {

struct NvmlApi {
  std::string library;
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::GetCountFn get_count = nullptr;
  nvml::GetHandleByIndexFn get_handle = nullptr;
  nvml::GetStringFn get_name = nullptr;
  nvml::GetStringFn get_uuid = nullptr;
  nvml::GetMemoryInfoFn get_memory = nullptr;
  nvml::GetPciInfoFn get_pci = nullptr;
  nvml::GetComputeCapabilityFn get_compute_capability = nullptr;
  nvml::SystemGetDriverVersionFn get_driver_version = nullptr;
  // Optional: older drivers or GPUs without them still give an inventory.
  nvml::GetMinorNumberFn get_minor = nullptr;
  nvml::GetTopologyCommonAncestorFn get_common_ancestor = nullptr;
  nvml::GetP2PStatusFn get_p2p_status = nullptr;
  nvml::GetNvLinkStateFn get_nvlink_state = nullptr;
  nvml::GetNvLinkRemotePciInfoFn get_nvlink_remote_pci = nullptr;
  nvml::GetRunningProcessesFn get_processes = nullptr;
  nvml::GetTotalEccErrorsFn get_ecc_errors = nullptr;
  nvml::EventSetCreateFn event_set_create = nullptr;
  nvml::RegisterEventsFn register_events = nullptr;
  nvml::EventSetWaitFn event_set_wait = nullptr;
  nvml::EventSetFreeFn event_set_free = nullptr;
  // Telemetry (telemetry.h), all optional: a GPU or driver without one leaves the field unset.
  nvml::GetUtilizationRatesFn get_utilization = nullptr;
  nvml::GetTemperatureFn get_temperature = nullptr;
  nvml::GetPowerUsageFn get_power = nullptr;
  nvml::GetTotalEnergyFn get_energy = nullptr;
  nvml::GetClockInfoFn get_clock = nullptr;
  nvml::GetClocksEventReasonsFn get_clock_reasons = nullptr;

  std::string describe(nvml::Return code) const {
    const char* text = error_string ? error_string(code) : nullptr;
    return fmt::format("{} (NVML error {})", text ? text : "unknown error", code);
  }
};

// The compute processes on a device; none when the query is not supported.
std::vector<GpuProcess> read_nvml_processes(const NvmlApi& api, nvml::Device device);

}  // namespace kiln::gpu
