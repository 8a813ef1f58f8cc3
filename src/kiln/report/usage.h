#pragma once
// GPU usage of the stored jobs (`kiln usage`, GET /api/usage): GPU-hours held (granted GPUs
// times the job's time: what the lease kept from others), GPU-hours busy and energy where the
// samplers measured them, and their cost at a price per GPU-hour of each
// model; summed by repository, branch, workflow, runs-on label, GPU model or day.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/store/store.h"

namespace kiln::report {

enum class UsageBy { repository, branch, workflow, label, model, day };
Result<UsageBy> parse_usage_by(std::string_view text);  // repo|branch|workflow|label|model|day
std::string_view to_string(UsageBy by);

struct UsageQuery {
  store::TimeMs since = 0;  // jobs that started at or after this time
  UsageBy by = UsageBy::repository;
  // Price of a GPU-hour by model: a key matches a model that contains it, ignoring case
  // ("H200" matches "NVIDIA H200"); the longest matching key wins.
  std::map<std::string, double> prices;
};

struct UsageRow {
  std::string key;
  int jobs = 0;      // jobs that ran (re-run jobs reused from an earlier attempt: not)
  int gpu_jobs = 0;  // of them, those that held GPUs
  double gpu_hours_held = 0;
  double gpu_hours_busy = 0;  // sampled jobs only
  double sampled_hours = 0;   // GPU-hours held by sampled jobs (what busy is out of)
  double energy_kwh = 0;      // sampled jobs whose GPUs report power
  double cost = 0;            // of the priced GPU-hours
  double unpriced_hours = 0;  // GPU-hours held on models without a price
};

struct Usage {
  std::vector<UsageRow> rows;  // by GPU-hours held, then key
  UsageRow total;
};

Result<Usage> usage(store::Store& store, const UsageQuery& query);
nlohmann::ordered_json to_json(const Usage& usage, const UsageQuery& query);
std::string format_usage(const Usage& usage, const UsageQuery& query);

}  // namespace kiln::report
