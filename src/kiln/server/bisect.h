#pragma once
// `kiln serve` on a perf regression (serve.bisect.on_regression, docs/serve.md "Bisection on a
// regression"): after a trigger's runs end, each job whose perf gate found a regression gets one
// bisection, a trigger of its own (event "bisect") in the server's queue. It runs the job at
// the commits between the last good run and the bad one (perf/bisect.h; RunQueue runs it), on
// the bad run's testbed, and posts the result on the regressed run: in the store (the run's
// extra "bisect", so in the API's run JSON), and as the commit status "kiln / bisect".

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/engine/engine.h"
#include "kiln/store/store.h"

namespace kiln::server {

// What a bisection trigger's payload holds.
struct BisectRequest {
  std::int64_t run = 0;      // the regressed run
  std::string job;           // its job's key ("bench", "bench (a100)")
  std::string workflow_job;  // the workflow's job id, for the engine's job filter
  std::string workflow;      // the run's workflow file, relative to the repository
  std::string benchmark, metric;
  std::string good, bad;           // commits: the last good run's, the regressed run's
  double threshold = 0.05;         // the smallest step between GOOD and BAD worth bisecting
  std::string testbed;             // the regressed result's testbed
  engine::RunOptions::GpuPin pin;  // the regressed job's GPUs
};
nlohmann::json to_payload(const BisectRequest& request);
Result<BisectRequest> parse_bisect_request(const nlohmann::json& payload);

// The bisection triggers `trigger`'s finished runs ask for (one per job with a regression, on
// its first regressed benchmark), stored queued; returns their ids. A regression already being
// bisected (the same repository, commit, job and benchmark: the trigger's identity) gets no
// second one. The regressed run's extra "bisect" says it is queued.
std::vector<std::int64_t> request_bisections(store::Store& store, const store::Trigger& trigger,
                                             const engine::RunReport& report);

// Writes `result` as the run's extra "bisect" (the API's run JSON shows it).
Status post_on_run(store::Store& store, std::int64_t run_id, const nlohmann::json& result);

}  // namespace kiln::server
