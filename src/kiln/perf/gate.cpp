#include "kiln/perf/gate.h"

#include "kiln/perf/change_points.h"

#include <algorithm>
#include <cmath>

namespace kiln::perf {
namespace {

double threshold_for(const Measurement& m, const GateOptions& options) {
  if (auto it = options.thresholds.find(m.name); it != options.thresholds.end()) return it->second;
  if (m.threshold_percent) return *m.threshold_percent / 100.0;
  return options.decision.threshold;
}

GateRow row_of(const Measurement& m, const GateOptions& options) {
  GateRow row;
  row.benchmark = m.name;
  row.metric = m.metric;
  row.unit = m.unit;
  row.direction = m.direction;
  row.threshold = threshold_for(m, options);
  row.current_samples = m.samples.size();
  return row;
}

std::string format_p(double p) {
  if (p < 1e-4) return "p<0.0001";
  return fmt::format("p={:.4f}", p);
}

std::string evidence(const GateRow& row) {
  const auto& c = row.comparison;
  std::string text;
  if (c.p_value && (c.method == "mann-whitney" || c.method == "run-history"))
    text = format_p(*c.p_value);
  if (c.interval) {
    if (!text.empty()) text += " ";
    text += fmt::format("[{}, {}]", format_value(c.interval->lower, row.unit),
                        format_value(c.interval->upper, row.unit));
  }
  if (text.empty()) text = "-";
  return text;
}

}  // namespace

int GateReport::count(Verdict verdict) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const GateRow& row) {
    return row.comparison.verdict == verdict;
  }));
}

GateReport compare_sets(const std::vector<Measurement>& base,
                        const std::vector<Measurement>& current, const GateOptions& options) {
  GateReport report;
  for (const auto& m : current) {
    GateRow row = row_of(m, options);
    DecisionOptions decision = options.decision;
    decision.threshold = row.threshold;
    Baseline baseline;
    auto found = std::find_if(base.begin(), base.end(), [&](const Measurement& b) {
      return b.name == m.name && b.metric == m.metric;
    });
    if (found != base.end()) {
      baseline.samples = found->samples;
      baseline.value = found->value;
      row.baseline_samples = found->samples.size();
    }
    row.comparison = compare(baseline, m.samples, m.value, m.direction, decision);
    report.rows.push_back(std::move(row));
  }
  return report;
}

Result<GateReport> gate_against_history(store::Store& store, const HistoryScope& scope,
                                        const std::vector<Measurement>& current,
                                        const GateOptions& options) {
  GateReport report;
  for (const auto& m : current) {
    GateRow row = row_of(m, options);
    DecisionOptions decision = options.decision;
    decision.threshold = row.threshold;
    store::BenchmarkQuery query;
    query.repository = scope.repository;
    query.benchmark = m.name;
    query.metric = m.metric;
    query.branch = scope.branch;
    query.testbed = scope.testbed;
    query.exclude_run_id = scope.exclude_run_id;
    query.limit = options.history_limit;
    KILN_TRY(auto past, store.list_benchmark_results(query));
    Baseline baseline;
    for (const auto& record : past) {
      baseline.history.push_back(record.value);
      baseline.history_samples.push_back(record.samples);
    }
    if (!past.empty()) {
      // The rank test's baseline is the latest run; its repetitions, if it had any.
      baseline.samples = past.back().samples;
      baseline.value = past.back().value;
    }
    row.baseline_samples = baseline.samples.size();
    row.history = past.size();
    row.comparison = compare(baseline, m.samples, m.value, m.direction, decision);
    std::vector<double> series = baseline.history;
    series.push_back(row.comparison.current);
    auto points = find_change_points(series);
    if (!points.empty()) {
      const auto& last = points.back();
      row.last_change =
          GateRow::LastChange{.commit = last.index < past.size() ? past[last.index].commit_sha : "",
                              .change = last.change,
                              .p_value = last.p_value,
                              .runs_ago = series.size() - 1 - last.index};
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

Result<GateReport> gate_records(store::Store& store,
                                const std::vector<store::BenchmarkResult>& records,
                                const std::string& baseline_branch, const GateOptions& options) {
  GateReport report;
  for (const auto& record : records) {
    HistoryScope scope{.repository = record.repository,
                       .branch = baseline_branch,
                       .testbed = record.testbed,
                       .exclude_run_id = record.run_id};
    KILN_TRY(auto one, gate_against_history(store, scope, {from_record(record)}, options));
    report.rows.insert(report.rows.end(), one.rows.begin(), one.rows.end());
  }
  return report;
}

std::string format_value(double value, const std::string& unit) {
  if (unit == "ns") {
    double magnitude = std::fabs(value);
    if (magnitude >= 1e9) return fmt::format("{:.4g} s", value / 1e9);
    if (magnitude >= 1e6) return fmt::format("{:.4g} ms", value / 1e6);
    if (magnitude >= 1e3) return fmt::format("{:.4g} us", value / 1e3);
    return fmt::format("{:.4g} ns", value);
  }
  if (unit.empty()) return fmt::format("{:.4g}", value);
  if (unit.starts_with("/")) return fmt::format("{:.4g}{}", value, unit);
  return fmt::format("{:.4g} {}", value, unit);
}

std::string format_table(const GateReport& report) {
  std::size_t name_width = 9;
  for (const auto& row : report.rows)
    name_width = std::max(
        name_width, row.benchmark.size() + (row.metric == "value" ? 0 : row.metric.size() + 3));
  name_width = std::min<std::size_t>(name_width, 60);
  std::string out =
      fmt::format("{:<{}}  {:>12}  {:>12}  {:>8}  {:<30}  {}\n", "BENCHMARK", name_width,
                  "BASELINE", "CURRENT", "CHANGE", "P-VALUE / INTERVAL", "VERDICT");
  for (const auto& row : report.rows) {
    const auto& c = row.comparison;
    std::string name =
        row.metric == "value" ? row.benchmark : fmt::format("{} ({})", row.benchmark, row.metric);
    bool has_baseline = c.baseline != 0 || !c.method.empty();
    std::string verdict(to_string(c.verdict));
    if (c.verdict == Verdict::regression || c.verdict == Verdict::improvement)
      verdict += fmt::format(" (threshold {:.3g}%)", row.threshold * 100);
    out += fmt::format(
        "{:<{}}  {:>12}  {:>12}  {:>8}  {:<30}  {}\n", name, name_width,
        has_baseline ? format_value(c.baseline, row.unit) : "-", format_value(c.current, row.unit),
        has_baseline ? fmt::format("{:+.1f}%", c.change * 100) : "-", evidence(row), verdict);
  }
  out += fmt::format(
      "{} compared: {} regression(s), {} improvement(s), {} unchanged, {} too noisy, "
      "{} without baseline\n",
      report.rows.size(), report.count(Verdict::regression), report.count(Verdict::improvement),
      report.count(Verdict::unchanged), report.count(Verdict::too_noisy),
      report.count(Verdict::no_baseline));
  for (const auto& row : report.rows) {
    if (!row.last_change) continue;
    const auto& last = *row.last_change;
    out += fmt::format(
        "{}: the level changed {:+.1f}% at commit {} ({} result(s) ago; change point, p={:.3f})\n",
        row.benchmark, last.change * 100, last.commit.substr(0, 10), last.runs_ago, last.p_value);
  }
  return out;
}

nlohmann::ordered_json to_json(const GateReport& report) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : report.rows) {
    const auto& c = row.comparison;
    nlohmann::ordered_json interval = nullptr;
    if (c.interval) interval = {{"lower", c.interval->lower}, {"upper", c.interval->upper}};
    rows.push_back(
        {{"benchmark", row.benchmark},
         {"metric", row.metric},
         {"unit", row.unit},
         {"direction", to_string(row.direction)},
         {"baseline", c.method.empty() && c.baseline == 0 ? nlohmann::ordered_json(nullptr)
                                                          : nlohmann::ordered_json(c.baseline)},
         {"current", c.current},
         {"change_percent", c.change * 100},
         {"threshold_percent", row.threshold * 100},
         {"method",
          c.method.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.method)},
         {"p_value",
          c.p_value ? nlohmann::ordered_json(*c.p_value) : nlohmann::ordered_json(nullptr)},
         {"interval", interval},
         {"detectable_percent", c.detectable * 100},
         {"baseline_samples", row.baseline_samples},
         {"current_samples", row.current_samples},
         {"history", row.history},
         {"verdict", to_string(c.verdict)},
         {"last_change",
          row.last_change
              ? nlohmann::ordered_json{{"commit", row.last_change->commit},
                                       {"change_percent", row.last_change->change * 100},
                                       {"p_value", row.last_change->p_value},
                                       {"runs_ago", row.last_change->runs_ago}}
              : nlohmann::ordered_json(nullptr)}});
  }
  return {{"passed", !report.failed()},
          {"regressions", report.count(Verdict::regression)},
          {"improvements", report.count(Verdict::improvement)},
          {"unchanged", report.count(Verdict::unchanged)},
          {"too_noisy", report.count(Verdict::too_noisy)},
          {"no_baseline", report.count(Verdict::no_baseline)},
          {"rows", rows}};
}

store::BenchmarkResult to_record(const Measurement& m, const ResultContext& context) {
  store::BenchmarkResult record;
  record.repository = context.repository;
  record.benchmark = m.name;
  record.metric = m.metric;
  record.unit = m.unit;
  record.direction = std::string(to_string(m.direction));
  record.branch = context.branch;
  record.testbed = context.testbed;
  record.commit_sha = context.commit_sha;
  record.time = context.time;
  record.run_id = context.run_id;
  record.job_id = context.job_id;
  record.source = context.source;
  record.format = context.format;
  record.value = m.value;
  record.samples = m.samples;
  if (m.threshold_percent) record.extra = {{"threshold", *m.threshold_percent}};
  return record;
}

Measurement from_record(const store::BenchmarkResult& record) {
  Measurement m;
  m.name = record.benchmark;
  m.metric = record.metric;
  m.unit = record.unit;
  m.direction = record.direction == "bigger_is_better" ? Direction::bigger_is_better
                                                       : Direction::smaller_is_better;
  m.samples = record.samples;
  m.value = record.value;
  if (record.extra.is_object() && record.extra.contains("threshold") &&
      record.extra["threshold"].is_number())
    m.threshold_percent = record.extra["threshold"].get<double>();
  return m;
}

}  // namespace kiln::perf
