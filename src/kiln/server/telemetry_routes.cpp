#include "kiln/server/telemetry_routes.h"

#include <httplib.h>

#include "kiln/server/bounded_http.h"
#include "kiln/server/reply.h"

namespace kiln::server {
namespace {

using json = nlohmann::ordered_json;

template <class T>
json or_null(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

}  // namespace

Result<json> run_telemetry_json(store::Store& store, std::int64_t run_id) {
  KILN_TRY(auto jobs, store.list_jobs(run_id));
  json out_jobs = json::array();
  for (const auto& job : jobs) {
    KILN_TRY(auto samples, store.list_gpu_samples(job.id));
    json gpus = json::array();
    for (const auto& s : samples) {  // by GPU index, then time
      if (gpus.empty() || gpus.back()["index"].get<int>() != s.gpu_index)
        gpus.push_back({{"index", s.gpu_index}, {"uuid", s.gpu_uuid}, {"samples", json::array()}});
      gpus.back()["samples"].push_back({{"t", s.time},
                                        {"util", or_null(s.utilization_pct)},
                                        {"mem_util", or_null(s.memory_utilization_pct)},
                                        {"mem_used_mib", s.memory_used_mib},
                                        {"mem_total_mib", or_null(s.memory_total_mib)},
                                        {"power_w", or_null(s.power_w)},
                                        {"temp_c", or_null(s.temperature_c)},
                                        {"throttle", s.throttle_reasons}});
    }
    out_jobs.push_back({{"job_id", job.id}, {"key", job.key}, {"gpus", std::move(gpus)}});
  }
  return json{{"jobs", std::move(out_jobs)}};
}

void register_telemetry_routes(httplib::Server& http, store::Store& store) {
  http.Get(R"(/api/runs/(\d+)/telemetry)",
           [&store](const httplib::Request& req, httplib::Response& res) {
             const auto id = path_id(req, res, "run");
             if (!id) return;
             auto telemetry = run_telemetry_json(store, *id);
             if (!telemetry) return reply_error(res, telemetry.error());
             reply(res, 200, *telemetry);
           });
}

}  // namespace kiln::server
