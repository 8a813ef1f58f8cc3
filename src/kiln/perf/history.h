#pragma once
// A benchmark's history as `kiln bench history` and GET /api/benchmarks show it: the stored
// results split into series (one per metric, branch and testbed), each in the unit of its newest
// point, with the change points of its values (change_points.h).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/perf/change_points.h"
#include "kiln/store/records.h"

namespace kiln::perf {

struct HistoryPoint {
  std::int64_t id = 0;
  std::int64_t time = 0;
  std::string commit;
  std::optional<std::int64_t> run_id;
  double value = 0;             // in the series' unit
  std::vector<double> samples;  // in the series' unit
};

struct HistorySeries {
  std::string benchmark, metric, unit, direction, branch, testbed;
  std::vector<HistoryPoint> points;  // oldest first
  std::vector<ChangePoint> change_points;
};

// The series of `records` (oldest first, as list_benchmark_results gives them; every record of
// one benchmark), in first-seen order, each cut to its newest `limit` points (0: all). Errors: a
// unit that does not convert to the newest point's (unit_factor).
Result<std::vector<HistorySeries>> benchmark_history(
    std::span<const store::BenchmarkResult> records, int limit);

// {metric, unit, direction, branch, testbed, points: [{id, time, commit, run_id, value,
// value_text, samples}], change_points: [{index, commit, time, before, after, before_text,
// after_text, change_percent, p_value}]}; *_text: format_value (gate.h), for people.
nlohmann::ordered_json to_json(const HistorySeries& series);

}  // namespace kiln::perf
