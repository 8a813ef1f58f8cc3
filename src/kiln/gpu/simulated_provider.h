#pragma once
// A GPU inventory read from a JSON file (`--simulate-gpus SPEC.json`), for CI and for planning on
// machines without GPUs. It is always named as a simulation: provider "simulated", generated
// UUIDs "GPU-sim-…", driver version "simulated".
//
// Format (DESIGN.md "GPU requests"; unknown keys are an error):
//   { "gpus": [ { "vendor": "nvidia"|"amd", "model": "...", "memory_mib": N, "arch": "sm_90",
//                 "uuid": "GPU-…" (optional), "pci_bus_id": "0000:18:00.0" (optional),
//                 "numa_node": 0 (optional), "memory_used_mib": N (optional, default 0),
//                 "processes": [ { "pid": N, "memory_mib": M } ] (optional: M MiB in use while
//                               process N exists, as a driver would show it),
//                 "faults": [ "text" ] (optional: what a driver would report wrong),
//                 "inject": { "when": PATH, "faults": [ "Xid 79 ..." ], "vanish": bool }
//                           (optional: once the file PATH exists, the GPU also reports those
//                           faults, or with vanish is not listed at all, as a GPU fallen off the
//                           bus; a job's step creates PATH to fail its GPU mid-job),
//                 "telemetry": { (optional: what the sampler reports, telemetry.h; each key
//                   optional) "utilization_pct": 0-100, "memory_utilization_pct": 0-100,
//                   "temperature_c": C, "power_w": W, "energy_mj": N, "sm_clock_mhz": N,
//                   "memory_clock_mhz": N, "throttle_reasons": ["sw_power_cap", ...] } } ],
//     "links": [ { "a": 0, "b": 1, "kind": "nvlink|xgmi|pcie-switch|pcie-host|numa|sys",
//                  "width": 18 (optional) } ] }

#include <filesystem>
#include <string>
#include <string_view>

#include "kiln/gpu/gpu.h"

namespace kiln::gpu {

// Parses a spec. `file` names the source in errors, which read
// "FILE: error: gpus[1].memory_mb: unknown key" (a JSON syntax error gives FILE:LINE:COL).
Result<Inventory> parse_simulated_inventory(std::string_view text, const std::string& file);
Result<Inventory> load_simulated_inventory(const std::filesystem::path& path);

// The UUID a simulated GPU gets when the spec gives none: "GPU-sim-000000000003" for index 3.
std::string simulated_uuid(int index);

class SimulatedProvider : public GpuProvider {
 public:
  explicit SimulatedProvider(std::filesystem::path spec) : spec_(std::move(spec)) {}
  // Re-reads the file on every call, so a test may change the inventory between calls.
  Result<Inventory> inventory(std::chrono::milliseconds deadline) override;
  std::string name() const override { return "simulated"; }

 private:
  std::filesystem::path spec_;
};

}  // namespace kiln::gpu
