#pragma once
// GET /api/runs/ID/telemetry (docs/serve.md): the stored GPU samples of a run's jobs, for the
// dashboard's charts. Public like GET /api/runs/ID (no token): it shows no logs or secrets.
//
//   {"jobs": [{"job_id": N, "key": "train", "gpus": [{"index": 0, "uuid": "GPU-...",
//     "samples": [{"t": ms, "util": %, "mem_util": %, "mem_used_mib": M, "mem_total_mib": M,
//                  "power_w": W, "temp_c": C, "throttle": bits}, ...]}]}]}
//
// Every job of the run is listed (gpus empty when it was not sampled); samples are in time
// order; a reading the provider did not give is null; throttle is NVML's clock-event reason
// bitmask (gpu/telemetry.h). An unknown run is 404.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/store/store.h"

namespace httplib {
class Server;
}

namespace kiln::server {

Result<nlohmann::ordered_json> run_telemetry_json(store::Store& store, std::int64_t run_id);

// Registers the route on `http`; `store` must outlive it.
void register_telemetry_routes(httplib::Server& http, store::Store& store);

}  // namespace kiln::server
