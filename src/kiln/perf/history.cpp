#include "kiln/perf/history.h"

#include <map>
#include <tuple>

#include "kiln/perf/gate.h"

namespace kiln::perf {

using json = nlohmann::ordered_json;

Result<std::vector<HistorySeries>> benchmark_history(
    std::span<const store::BenchmarkResult> records, int limit) {
  std::vector<std::vector<const store::BenchmarkResult*>> groups;
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> index;
  for (const auto& record : records) {
    auto key = std::make_tuple(record.metric, record.branch, record.testbed);
    auto [it, added] = index.emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(&record);
  }
  std::vector<HistorySeries> out;
  for (auto& group : groups) {
    if (limit > 0 && group.size() > static_cast<std::size_t>(limit))
      group.erase(group.begin(), group.end() - limit);
    // In the unit of the newest point: times stored in ms before the parsers kept ns convert.
    const auto& newest = *group.back();
    const auto measurement = from_record(newest);
    HistorySeries series{newest.benchmark, newest.metric,  newest.unit, newest.direction,
                         newest.branch,    newest.testbed, {},          {}};
    std::vector<double> values;
    for (const auto* record : group) {
      KILN_TRY(double factor, unit_factor(measurement, record->unit, record->source));
      HistoryPoint point{record->id,     record->time,           record->commit_sha,
                         record->run_id, record->value * factor, record->samples};
      for (double& sample : point.samples) sample *= factor;
      values.push_back(point.value);
      series.points.push_back(std::move(point));
    }
    series.change_points = find_change_points(values);
    out.push_back(std::move(series));
  }
  return out;
}

json to_json(const HistorySeries& series) {
  json points = json::array();
  for (const auto& p : series.points)
    points.push_back({{"id", p.id},
                      {"time", p.time},
                      {"commit", p.commit},
                      {"run_id", p.run_id ? json(*p.run_id) : json(nullptr)},
                      {"value", p.value},
                      {"value_text", format_value(p.value, series.unit)},
                      {"samples", p.samples}});
  json changes = json::array();
  for (const auto& c : series.change_points) {
    const auto& at = series.points[c.index];
    changes.push_back({{"index", c.index},
                       {"commit", at.commit},
                       {"time", at.time},
                       {"before", c.before},
                       {"after", c.after},
                       {"before_text", format_value(c.before, series.unit)},
                       {"after_text", format_value(c.after, series.unit)},
                       {"change_percent", c.change * 100},
                       {"p_value", c.p_value}});
  }
  return {{"metric", series.metric},
          {"unit", series.unit},
          {"direction", series.direction},
          {"branch", series.branch},
          {"testbed", series.testbed},
          {"points", std::move(points)},
          {"change_points", std::move(changes)}};
}

}  // namespace kiln::perf
