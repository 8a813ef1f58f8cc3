#pragma once
// GET /api/benchmarks[?repository=OWNER/NAME&limit=N] (docs/serve.md#api): every benchmark's
// history of the served repositories (or of the one named), with its change points, for the
// dashboard's benchmarks page:
//
//   {"benchmarks": [{"repository", "benchmark", "series": [perf::to_json(series)...]}]}
//
// by repository, then benchmark name; each series cut to its newest `limit` points (default 100).
// The series are those of `kiln bench history NAME --json` (perf/history.h builds both).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/store/store.h"

namespace kiln::server {

inline constexpr int k_default_history_points = 100;

Result<nlohmann::ordered_json> benchmarks_json(store::Store& store,
                                               const std::vector<std::string>& repositories,
                                               int limit);

}  // namespace kiln::server
