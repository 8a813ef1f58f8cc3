#pragma once
// GET /api/gpus (docs/serve.md#api): the host's GPUs for the dashboard's GPU page and `curl`.
//
//   {"provider": "nvml", "gpus": [{index, state, detail, since, uuid, vendor, model, arch,
//     pci_bus_id, numa_node, memory_total_mib, memory_used_mib, driver_version,
//     telemetry: {source, time, utilization_pct, memory_utilization_pct, temperature_c,
//                 power_w} | null,
//     holder: {run_id, run_number, repository, workflow, job_id, job, url} | null}],
//    "links": [{a, b, kind, width}],
//    "topology": {"islands": [[0, 1], [2]], "matrix": [[null, "nvlink", "sys"], ...]}}
//
// telemetry: a reading of the provider's sampler now ("live"); when the sampler gives none, the
// newest stored sample of the job that holds the GPU ("job"); null when neither exists. holder:
// the run and job of a lease this server's process holds (the run lives in its store); a lease
// of another kiln process (`kiln run` in a checkout) names its run in that process's store, so
// only `detail` (the lease's text) says who holds it. topology.matrix[a][b] is
// Inventory::connection(a, b) (null on the diagonal); islands are the NVLink/xGMI islands.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/gpu/gpu.h"
#include "kiln/gpu/telemetry.h"
#include "kiln/store/store.h"

namespace kiln::server {

// Who holds a leased GPU, by name.
struct GpuHolder {
  std::int64_t run_id = 0;
  std::int64_t run_number = 0;
  std::string repository;
  std::string workflow;
  std::int64_t job_id = 0;  // 0: the job was not found in the run
  std::string job;          // the job's key, "build (linux, 3.11)"
};

// The holder of `lease` looked up in `store`, when the lease belongs to `self` (the process whose
// store it is); nullopt for another process's lease or a run `store` does not have. The job is
// the one whose row the lease's job token ends with ("<prefix>-<job id>", the scheduler's
// tokens), if that job belongs to the run.
std::optional<GpuHolder> lease_holder(store::Store& store, const store::GpuLease& lease,
                                      const store::ProcessIdentity& self);

// A GPU's reading for the page.
struct GpuReading {
  std::string source;  // "live" or "job"
  std::int64_t time = 0;
  std::optional<double> utilization_pct;
  std::optional<double> memory_utilization_pct;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
};
GpuReading reading_of(const gpu::GpuSample& sample);
// The newest stored sample of `gpu_index` among the job's samples; nullopt when it has none.
std::optional<GpuReading> latest_job_reading(store::Store& store, std::int64_t job_id,
                                             int gpu_index);

// The document above. `states`, `readings` and `holders` are by GPU index, as long as
// inventory.gpus.
nlohmann::ordered_json gpus_json(const gpu::Inventory& inventory,
                                 std::span<const engine::GpuState> states,
                                 std::span<const std::optional<GpuReading>> readings,
                                 std::span<const std::optional<GpuHolder>> holders);

// Everything above for the host `supervisor` sees, freshly read: states, the inventory, one
// sample of every GPU (within a second), the holders from `store`.
Result<nlohmann::ordered_json> host_gpus_json(engine::GpuSupervisor& supervisor,
                                              store::Store& store);

}  // namespace kiln::server
