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

// The reason after the verdict in the table: "too-noisy (the interval ±7% is wider ...)".
std::string why(std::string reason) {
  constexpr std::string_view k_noisy = "too noisy: ";
  if (reason.starts_with(k_noisy)) reason.erase(0, k_noisy.size());
  return reason;
}

}  // namespace

int GateReport::count(Verdict verdict) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const GateRow& row) {
    return row.comparison.verdict == verdict;
  }));
}

Result<double> unit_factor(const Measurement& m, const std::string& stored,
                           const std::string& source) {
  if (stored == m.unit) return 1.0;
  // Nanoseconds per unit: the parsers store times in ns, older results may say ms or s.
  auto ns = [](std::string_view unit) -> std::optional<double> {
    if (unit == "ns") return 1.0;
    if (unit == "us" || unit == "\u00b5s" || unit == "\u03bcs") return 1e3;
    if (unit == "ms") return 1e6;
    if (unit == "s") return 1e9;
    return std::nullopt;
  };
  auto from = ns(stored), to = ns(m.unit);
  if (from && to) return *from / *to;
  std::string field = m.field.empty() ? "" : m.field + ".unit: ";
  return fail_at(SourceLocation{source, 0, 0},
                 "{}'{}' is not the unit '{}' of the earlier results of '{}' ({}): a benchmark "
                 "keeps its unit (time units convert); give a changed one a new name",
                 field, m.unit, stored, m.name, m.metric);
}

Status check_units(store::Store& store, const std::string& repository, const std::string& testbed,
                   const std::vector<Measurement>& measurements, const std::string& source) {
  for (const auto& m : measurements) {
    store::BenchmarkQuery query;
    query.repository = repository;
    query.benchmark = m.name;
    query.metric = m.metric;
    query.testbed = testbed;
    query.limit = 1;
    KILN_TRY(auto newest, store.list_benchmark_results(query));
    if (!newest.empty()) KILN_TRY_VOID(unit_factor(m, newest.back().unit, source));
  }
  return {};
}

namespace {

// `m` in `unit`'s terms: values and samples times `factor`.
Measurement scaled(Measurement m, double factor) {
  m.value *= factor;
  for (double& v : m.samples) v *= factor;
  return m;
}

}  // namespace

Result<GateReport> compare_sets(const std::vector<Measurement>& base,
                                const std::vector<Measurement>& current,
                                const GateOptions& options) {
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
      KILN_TRY(double factor, unit_factor(m, found->unit, "the current results"));
      auto b = scaled(*found, factor);
      baseline.samples = b.samples;
      baseline.value = b.value;
      row.baseline_samples = b.samples.size();
    }
    row.comparison = compare(baseline, m.samples, m.value, m.direction, decision);
    if (row.comparison.method == "mann-whitney")
      row.note = fmt::format(
          "run-to-run noise unknown: one run a side shows only the noise between its "
          "repetitions; {} or more stored runs of the baseline would measure it (--history)",
          options.decision.min_history);
    report.rows.push_back(std::move(row));
  }
  return report;
}

Result<GateReport> gate_against_history(store::Store& store, const HistoryScope& scope,
                                        const std::vector<Measurement>& current,
                                        const GateOptions& options,
                                        const std::vector<Measurement>& appended) {
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
    query.limit = scope.up_to_id ? 0 : options.history_limit;
    KILN_TRY(auto past, store.list_benchmark_results(query));
    if (scope.up_to_id)
      std::erase_if(past, [&](const store::BenchmarkResult& r) { return r.id > *scope.up_to_id; });
    for (const auto& extra : appended)
      if (extra.name == m.name && extra.metric == m.metric) {
        auto record = to_record(extra, {});
        record.source = "the baseline file";
        past.push_back(std::move(record));
      }
    if (past.size() > static_cast<std::size_t>(options.history_limit))
      past.erase(past.begin(), past.end() - options.history_limit);
    Baseline baseline;
    for (const auto& record : past) {
      KILN_TRY(double factor, unit_factor(m, record.unit, record.source));
      auto stored = scaled(from_record(record), factor);
      baseline.history.push_back(stored.value);
      baseline.history_samples.push_back(stored.samples);
    }
    if (!past.empty()) {
      // The rank test's baseline is the latest run; its repetitions, if it had any.
      baseline.samples = baseline.history_samples.back();
      baseline.value = baseline.history.back();
    }
    row.baseline_samples = baseline.samples.size();
    row.history = past.size();
    row.comparison = compare(baseline, m.samples, m.value, m.direction, decision);
    if (row.comparison.baseline_start > 0 && row.comparison.baseline_start < past.size())
      row.baseline_from = past[row.comparison.baseline_start].commit_sha;
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
                       .exclude_run_id = record.run_id,
                       .up_to_id = {}};
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
      fmt::format("{:<{}}  {:>12}  {:>12}  {:>8}  {:>8}  {:<9}  {}\n", "BENCHMARK", name_width,
                  "BASELINE", "CURRENT", "CHANGE", "INTERVAL", "P-VALUE", "VERDICT");
  for (const auto& row : report.rows) {
    const auto& c = row.comparison;
    std::string name =
        row.metric == "value" ? row.benchmark : fmt::format("{} ({})", row.benchmark, row.metric);
    bool has_baseline = c.baseline != 0 || !c.method.empty();
    out += fmt::format("{:<{}}  {:>12}  {:>12}  {:>8}  {:>8}  {:<9}  {} ({})\n", name, name_width,
                       has_baseline ? format_value(c.baseline, row.unit) : "-",
                       format_value(c.current, row.unit),
                       has_baseline ? fmt::format("{:+.1f}%", c.change * 100) : "-",
                       c.detectable > 0 ? fmt::format("±{:.1f}%", c.detectable * 100) : "-",
                       c.p_value ? format_p(*c.p_value) : "-", to_string(c.verdict), why(c.reason));
  }
  out += fmt::format(
      "{} compared: {} regression(s), {} improvement(s), {} unchanged, {} too noisy, "
      "{} without baseline\n",
      report.rows.size(), report.count(Verdict::regression), report.count(Verdict::improvement),
      report.count(Verdict::unchanged), report.count(Verdict::too_noisy),
      report.count(Verdict::no_baseline));
  for (const auto& row : report.rows) {
    if (!row.note.empty()) out += fmt::format("{}: note: {}\n", row.benchmark, row.note);
    if (!row.baseline_from.empty())
      out += fmt::format(
          "{}: the baseline starts at commit {}, after the history's last change "
          "point\n",
          row.benchmark, row.baseline_from.substr(0, 10));
    if (row.comparison.interval && row.comparison.interval->outliers > 0)
      out += fmt::format("{}: {} outlying run(s) of the history left out of the baseline\n",
                         row.benchmark, row.comparison.interval->outliers);
    if (!row.last_change) continue;
    const auto& last = *row.last_change;
    out += fmt::format(
        "{}: the level changed {:+.1f}% at commit {} ({} result(s) ago; change point, p={:.3f})\n",
        row.benchmark, last.change * 100, last.commit.substr(0, 10), last.runs_ago, last.p_value);
  }
  return out;
}

nlohmann::ordered_json to_json(const GateReport& report) {
  using json = nlohmann::ordered_json;
  json rows = json::array();
  for (const auto& row : report.rows) {
    const auto& c = row.comparison;
    json interval = nullptr;
    if (c.interval)
      interval = {{"lower", c.interval->lower},
                  {"upper", c.interval->upper},
                  {"baseline_runs", c.interval->n},
                  {"outlying_runs", c.interval->outliers}};
    auto text_or_null = [](const std::string& text) {
      return text.empty() ? json(nullptr) : json(text);
    };
    rows.push_back(
        {{"benchmark", row.benchmark},
         {"metric", row.metric},
         {"unit", row.unit},
         {"direction", to_string(row.direction)},
         {"baseline", c.method.empty() && c.baseline == 0 ? json(nullptr) : json(c.baseline)},
         {"current", c.current},
         {"change_percent", c.change * 100},
         {"threshold_percent", row.threshold * 100},
         {"method", text_or_null(c.method)},
         {"p_value", c.p_value ? json(*c.p_value) : json(nullptr)},
         {"interval", interval},
         {"detectable_percent", c.detectable * 100},
         {"baseline_samples", row.baseline_samples},
         {"current_samples", row.current_samples},
         {"history", row.history},
         {"verdict", to_string(c.verdict)},
         {"reason", c.reason},
         {"note", text_or_null(row.note)},
         {"baseline_from", text_or_null(row.baseline_from)},
         {"last_change", row.last_change ? json{{"commit", row.last_change->commit},
                                                {"change_percent", row.last_change->change * 100},
                                                {"p_value", row.last_change->p_value},
                                                {"runs_ago", row.last_change->runs_ago}}
                                         : json(nullptr)}});
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
