#include "kiln/engine/gate/benchmarks.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "kiln/perf/parse.h"

namespace kiln::engine {

std::string make_testbed(const std::vector<std::string>& labels,
                         const std::vector<gpu::GpuInfo>& gpus) {
  std::map<std::string, int> models;
  std::set<std::string> drivers;
  for (const auto& info : gpus) {
    ++models[info.model.empty() ? info.vendor : info.model];
    if (!info.driver_version.empty()) drivers.insert(info.driver_version);
  }
  std::string text = "gpus=";
  if (models.empty()) text += "none";
  bool first = true;
  for (const auto& [model, count] : models) {
    text += fmt::format("{}{} x{}", first ? "" : ", ", model, count);
    first = false;
  }
  if (!drivers.empty()) {
    text += "; driver=";
    first = true;
    for (const auto& driver : drivers) {
      text += (first ? "" : ",") + driver;
      first = false;
    }
  }
  std::vector<std::string> sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  text += "; labels=";
  for (std::size_t i = 0; i < sorted.size(); ++i) text += (i ? "," : "") + sorted[i];
  return text;
}

LogLines BenchmarkCollector::collect(const std::filesystem::path& list,
                                     const std::filesystem::path& workspace,
                                     const core::RunAs* run_as) {
  LogLines lines;
  std::ifstream in(list);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    if (++number <= lines_read_) continue;
    lines_read_ = number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::filesystem::path path = line;
    if (path.is_relative()) path = workspace / path;
    if (run_as)
      if (auto readable = core::check_readable_by(path, *run_as); !readable) {
        lines.emplace_back("error", "benchmark results: " + readable.error().message);
        continue;
      }
    auto parsed = perf::parse_result_file(path);
    if (!parsed) {
      lines.emplace_back("error", "benchmark results: " + parsed.error().to_string());
      continue;
    }
    for (const auto& note : parsed->notes)
      lines.emplace_back("warning", fmt::format("{}: {}", line, note));
    if (auto units = perf::check_units(store_, context_.repository, context_.testbed,
                                       parsed->measurements, path.string());
        !units) {
      lines.emplace_back("error", "benchmark results: " + units.error().to_string());
      continue;
    }
    perf::ResultContext context{
        .repository = context_.repository,
        .branch = context_.branch,
        .testbed = context_.testbed,
        .commit_sha = context_.commit,
        .run_id = context_.run_id ? std::optional(context_.run_id) : std::nullopt,
        .job_id = context_.job_id ? std::optional(context_.job_id) : std::nullopt,
        .source = path.string(),
        .format = parsed->format,
        .time = 0};
    std::vector<store::BenchmarkResult> records;
    for (const auto& m : parsed->measurements) records.push_back(perf::to_record(m, context));
    auto ids = store_.add_benchmark_results(records);
    if (!ids) {
      lines.emplace_back(
          "error", "benchmark results: cannot store " + line + ": " + ids.error().to_string());
      continue;
    }
    for (std::size_t i = 0; i < records.size(); ++i) {
      records[i].id = (*ids)[i];
      stored_.push_back(std::move(records[i]));
    }
    lines.emplace_back("kiln", fmt::format("Benchmark results: {} metric(s) from {} ({})",
                                           parsed->measurements.size(), line, parsed->format));
  }
  return lines;
}

BenchmarkCollector::Verdict BenchmarkCollector::gate(
    const std::map<std::string, std::string>& env) {
  Verdict verdict;
  if (stored_.empty()) return verdict;
  perf::GateOptions options;
  if (auto it = env.find("KILN_PERF_THRESHOLD"); it != env.end()) {
    char* end = nullptr;
    double percent = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && *end == '\0' && percent > 0 && percent < 1000)
      options.decision.threshold = percent / 100;
    else
      verdict.lines.emplace_back(
          "warning", fmt::format("KILN_PERF_THRESHOLD={}: expected a percentage; using {}%",
                                 it->second, options.decision.threshold * 100));
  }
  bool enforce = true;
  if (auto it = env.find("KILN_PERF_GATE"); it != env.end()) {
    if (it->second == "off" || it->second == "false" || it->second == "warn") {
      enforce = false;
    } else if (it->second != "on" && it->second != "true" && it->second != "enforce") {
      // A value the gate does not know is not quietly "enforce": the job says so and fails.
      verdict.failed = true;
      verdict.reason = fmt::format(
          "perf gate: KILN_PERF_GATE={}: expected on, enforce or true (fail on a regression), "
          "off, false or warn (report only)",
          it->second);
      verdict.lines.emplace_back("error", verdict.reason);
      return verdict;
    }
  }
  auto report = perf::gate_records(store_, stored_, context_.default_branch, options);
  if (!report) {
    // Results that cannot be judged are not a pass.
    verdict.failed = true;
    verdict.reason = "perf gate: " + report.error().to_string();
    verdict.lines.emplace_back("error", verdict.reason);
    return verdict;
  }
  verdict.report = perf::to_json(*report);
  verdict.lines.emplace_back("kiln", fmt::format("Perf gate: against {} on testbed '{}'",
                                                 context_.default_branch, context_.testbed));
  std::istringstream table(perf::format_table(*report));
  for (std::string row; std::getline(table, row);) verdict.lines.emplace_back("kiln", row);
  int regressions = report->count(perf::Verdict::regression);
  if (regressions > 0 && enforce) {
    verdict.failed = true;
    std::string names;
    for (const auto& row : report->rows)
      if (row.comparison.verdict == perf::Verdict::regression)
        names += fmt::format("{}{} {:+.1f}%", names.empty() ? "" : ", ", row.benchmark,
                             row.comparison.change * 100);
    verdict.reason = fmt::format("performance regression: {}", names);
    verdict.lines.emplace_back("error", verdict.reason);
  }
  return verdict;
}

}  // namespace kiln::engine
