// Format detection and the JSON formats (Google Benchmark, pytest-benchmark, Criterion,
// custom). The go test text format is in parse_go.cpp.

#include "kiln/perf/parse.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/core/json_parse.h"

namespace kiln::perf {
namespace {

using nlohmann::json;

// An error about a field of a JSON file: "FILE: error: FIELD: MESSAGE".
template <class... Args>
std::unexpected<Error> field_error(const std::filesystem::path& origin, std::string_view field,
                                   fmt::format_string<Args...> format, Args&&... args) {
  return fail_at(SourceLocation{origin.string(), 0, 0}, "{}: {}", field,
                 fmt::format(format, std::forward<Args>(args)...));
}

std::string_view type_name(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  return "an object";
}

// A finite number at `field` of `object`, or an error naming the field.
Result<double> number_at(const json& object, const std::string& key, const std::string& field,
                         const std::filesystem::path& origin) {
  auto it = object.find(key);
  if (it == object.end()) return field_error(origin, field, "missing");
  if (!it->is_number())
    return field_error(origin, field, "expected a number, got {}", type_name(*it));
  double value = it->get<double>();
  if (!std::isfinite(value)) return field_error(origin, field, "not a finite number");
  return value;
}

Result<std::string> string_at(const json& object, const std::string& key, const std::string& field,
                              const std::filesystem::path& origin) {
  auto it = object.find(key);
  if (it == object.end()) return field_error(origin, field, "missing");
  if (!it->is_string())
    return field_error(origin, field, "expected a string, got {}", type_name(*it));
  if (it->get_ref<const std::string&>().empty()) return field_error(origin, field, "is empty");
  return it->get<std::string>();
}

// A flag of a row: true only when the key holds the boolean true.
bool flag_at(const json& object, const std::string& key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

// The string at `key`, or `fallback` when it is missing or not a string (for notes only).
std::string text_or(const json& object, const std::string& key, const std::string& fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// A time must be positive: 0 or less is a broken measurement, never a fast one.
Status positive_time(double value, const std::string& field, const std::filesystem::path& origin) {
  if (value > 0) return {};
  return field_error(origin, field, "a time must be positive, got {}", value);
}

// Nanoseconds per `unit` for Google Benchmark's time units.
Result<double> ns_per(std::string_view unit) {
  if (unit == "ns") return 1.0;
  if (unit == "us" || unit == "\u00b5s" || unit == "\u03bcs") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  return fail(ErrorCode::invalid_input, "unknown time unit '{}' (ns, us, ms, s)", unit);
}

bool is_throughput_unit(std::string_view unit) {
  return unit.ends_with("/s") || unit.ends_with("/sec") || unit.ends_with("per_second") ||
         unit.ends_with("per second") || unit == "ops" || unit == "Hz";
}

// Measurements in first-seen order, keyed by (name, metric), so repetitions collect.
class Collector {
 public:
  Measurement& at(const std::string& name, const std::string& metric, const std::string& unit,
                  Direction direction, const std::string& field) {
    auto key = std::make_pair(name, metric);
    auto it = index_.find(key);
    if (it != index_.end()) return measurements_[it->second];
    index_[key] = measurements_.size();
    measurements_.push_back(
        {.name = name, .metric = metric, .unit = unit, .direction = direction, .field = field});
    return measurements_.back();
  }
  std::vector<Measurement> finish() {
    for (auto& m : measurements_)
      if (!m.samples.empty()) m.value = summary_of(m.samples);
    return std::move(measurements_);
  }
  bool has(const std::string& name) const {
    for (const auto& [key, index] : index_)
      if (key.first == name) return true;
    return false;
  }

 private:
  std::map<std::pair<std::string, std::string>, std::size_t> index_;
  std::vector<Measurement> measurements_;
};

// --- Google Benchmark ----------------------------------------------------------------------

// The keys of a row that are not counters.
bool is_google_row_key(std::string_view key) {
  static constexpr std::string_view k_keys[] = {"name",
                                                "family_index",
                                                "per_family_instance_index",
                                                "run_name",
                                                "run_type",
                                                "repetitions",
                                                "repetition_index",
                                                "threads",
                                                "iterations",
                                                "real_time",
                                                "cpu_time",
                                                "time_unit",
                                                "aggregate_name",
                                                "aggregate_unit",
                                                "error_occurred",
                                                "error_message",
                                                "label",
                                                "skipped",
                                                "skip_message",
                                                "big_o",
                                                "rms",
                                                "complexity"};
  return std::ranges::find(k_keys, key) != std::end(k_keys);
}

Result<ResultFile> parse_google_benchmark(const json& root, const std::filesystem::path& origin) {
  ResultFile file{.format = "google-benchmark", .measurements = {}, .notes = {}};
  const auto& rows = root.at("benchmarks");
  Collector iterations;
  // Aggregate rows by run name: used only for benchmarks without iteration rows.
  std::vector<std::pair<std::string, std::size_t>> aggregates;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    std::string field = fmt::format("benchmarks[{}]", i);
    if (!row.is_object())
      return field_error(origin, field, "expected an object, got {}", type_name(row));
    KILN_TRY(std::string name, string_at(row, "name", field + ".name", origin));
    std::string run_name = name;
    if (row.contains("run_name")) {
      KILN_TRY(run_name, string_at(row, "run_name", field + ".run_name", origin));
    }
    if (flag_at(row, "error_occurred") || flag_at(row, "skipped")) {
      file.notes.push_back(
          fmt::format("{}: skipped ({})", name,
                      text_or(row, "error_message", text_or(row, "skip_message", "error"))));
      continue;
    }
    std::string run_type = "iteration";
    if (row.contains("run_type")) {
      KILN_TRY(run_type, string_at(row, "run_type", field + ".run_type", origin));
    }
    if (run_type == "aggregate") {
      aggregates.emplace_back(run_name, i);
      continue;
    }
    if (run_type != "iteration")
      return field_error(origin, field + ".run_type",
                         "expected \"iteration\" or \"aggregate\", got \"{}\"", run_type);
    // Big-O rows (BM_x_BigO, _RMS) are fits, not measurements.
    if (row.contains("big_o") || row.contains("rms")) continue;
    std::string unit = "ns";
    if (row.contains("time_unit")) {
      KILN_TRY(unit, string_at(row, "time_unit", field + ".time_unit", origin));
    }
    auto scale = ns_per(unit);
    if (!scale) return field_error(origin, field + ".time_unit", "{}", scale.error().message);
    for (const char* metric : {"real_time", "cpu_time"}) {
      std::string at = fmt::format("{}.{}", field, metric);
      KILN_TRY(double value, number_at(row, metric, at, origin));
      KILN_TRY_VOID(positive_time(value, at, origin));
      auto& m = iterations.at(run_name, metric, "ns", Direction::smaller_is_better, field);
      m.samples.push_back(value * *scale);
    }
    for (const auto& [key, value] : row.items()) {
      if (is_google_row_key(key) || !value.is_number()) continue;
      double number = value.get<double>();
      if (!std::isfinite(number))
        return field_error(origin, field + "." + key, "not a finite number");
      std::string counter_unit = key.ends_with("per_second") ? "/s" : "";
      iterations.at(run_name, key, counter_unit, Direction::bigger_is_better, field)
          .samples.push_back(number);
    }
  }
  // Benchmarks that only reported aggregates get a value (the median, else the mean), never
  // samples: a mean of repetitions is not a repetition.
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, std::size_t>> by_run;
  for (const auto& [run_name, i] : aggregates) {
    if (!by_run.contains(run_name)) order.push_back(run_name);
    by_run[run_name][text_or(rows[i], "aggregate_name", "")] = i;
  }
  for (const auto& run_name : order) {
    if (iterations.has(run_name)) continue;
    const auto& names = by_run[run_name];
    auto chosen = names.find("median");
    if (chosen == names.end()) chosen = names.find("mean");
    if (chosen == names.end()) continue;
    const auto& row = rows[chosen->second];
    std::string field = fmt::format("benchmarks[{}]", chosen->second);
    std::string unit = "ns";
    if (row.contains("time_unit")) {
      KILN_TRY(unit, string_at(row, "time_unit", field + ".time_unit", origin));
    }
    auto scale = ns_per(unit);
    if (!scale) return field_error(origin, field + ".time_unit", "{}", scale.error().message);
    for (const char* metric : {"real_time", "cpu_time"}) {
      std::string at = fmt::format("{}.{}", field, metric);
      KILN_TRY(double value, number_at(row, metric, at, origin));
      KILN_TRY_VOID(positive_time(value, at, origin));
      iterations.at(run_name, metric, "ns", Direction::smaller_is_better, field).value =
          value * *scale;
    }
  }
  file.measurements = iterations.finish();
  return file;
}

// --- pytest-benchmark ----------------------------------------------------------------------

Result<ResultFile> parse_pytest_benchmark(const json& root, const std::filesystem::path& origin) {
  ResultFile file{.format = "pytest-benchmark", .measurements = {}, .notes = {}};
  const auto& rows = root.at("benchmarks");
  Collector collector;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    std::string field = fmt::format("benchmarks[{}]", i);
    if (!row.is_object())
      return field_error(origin, field, "expected an object, got {}", type_name(row));
    std::string name;
    if (row.contains("fullname")) {
      KILN_TRY(name, string_at(row, "fullname", field + ".fullname", origin));
    } else {
      KILN_TRY(name, string_at(row, "name", field + ".name", origin));
    }
    auto stats = row.find("stats");
    if (stats == row.end() || !stats->is_object())
      return field_error(origin, field + ".stats", "expected an object");
    auto& m = collector.at(name, "time", "ns", Direction::smaller_is_better, field);
    auto data = stats->find("data");
    if (data != stats->end() && data->is_array() && !data->empty()) {
      for (std::size_t j = 0; j < data->size(); ++j) {
        const auto& sample = (*data)[j];
        std::string at = fmt::format("{}.stats.data[{}]", field, j);
        if (!sample.is_number() || !std::isfinite(sample.get<double>()))
          return field_error(origin, at, "expected a number");
        KILN_TRY_VOID(positive_time(sample.get<double>(), at, origin));
        m.samples.push_back(sample.get<double>() * 1e9);
      }
    } else {
      KILN_TRY(double value, number_at(*stats, "median", field + ".stats.median", origin));
      KILN_TRY_VOID(positive_time(value, field + ".stats.median", origin));
      m.value = value * 1e9;
    }
  }
  file.measurements = collector.finish();
  return file;
}

// --- Criterion -----------------------------------------------------------------------------

Result<json> read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::not_found, "cannot read {}", path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return core::parse_json_text(buffer.str(), path);
}

// The benchmark id: benchmark.json's full_id beside the estimates, else the directories
// between criterion/ and new/ (or base/), else the file's directory name.
std::string criterion_name(const std::filesystem::path& origin) {
  auto dir = origin.parent_path();
  if (auto meta = read_json_file(dir / "benchmark.json"); meta && meta->is_object()) {
    if (auto it = meta->find("full_id");
        it != meta->end() && it->is_string() && !it->get_ref<const std::string&>().empty())
      return it->get<std::string>();
  }
  std::vector<std::string> parts;
  for (const auto& part : dir) parts.push_back(part.string());
  if (!parts.empty() && (parts.back() == "new" || parts.back() == "base")) parts.pop_back();
  auto criterion = std::find(parts.rbegin(), parts.rend(), "criterion");
  std::string name;
  if (criterion != parts.rend()) {
    for (auto it = criterion.base(); it != parts.end(); ++it)
      name += (name.empty() ? "" : "/") + *it;
  }
  if (name.empty() && !parts.empty()) name = parts.back();
  return name.empty() ? origin.stem().string() : name;
}

Result<ResultFile> parse_criterion(const json& root, const std::filesystem::path& origin) {
  ResultFile file{.format = "criterion", .measurements = {}, .notes = {}};
  Measurement m{.name = criterion_name(origin),
                .metric = "time",
                .unit = "ns",
                .direction = Direction::smaller_is_better};
  const auto& median = root.at("median");
  if (!median.is_object())
    return field_error(origin, "median", "expected an object, got {}", type_name(median));
  KILN_TRY(m.value, number_at(median, "point_estimate", "median.point_estimate", origin));
  KILN_TRY_VOID(positive_time(m.value, "median.point_estimate", origin));
  // Raw samples: sample.json beside the estimates has total times and iteration counts.
  auto sample_path = origin.parent_path() / "sample.json";
  auto sample = read_json_file(sample_path);
  if (!sample && sample.error().code == ErrorCode::invalid_input)
    return std::unexpected(sample.error());
  if (sample && sample->is_object()) {
    const auto iters = sample->find("iters");
    const auto times = sample->find("times");
    if (iters == sample->end() || times == sample->end() || !iters->is_array() ||
        !times->is_array() || iters->size() != times->size())
      return field_error(sample_path, "iters/times", "expected two arrays of the same length");
    for (std::size_t i = 0; i < iters->size(); ++i) {
      const auto& n = (*iters)[i];
      const auto& t = (*times)[i];
      if (!n.is_number() || !t.is_number() || n.get<double>() <= 0 || t.get<double>() <= 0 ||
          !std::isfinite(t.get<double>()))
        return field_error(sample_path, fmt::format("times[{}]", i), "expected positive numbers");
      m.samples.push_back(t.get<double>() / n.get<double>());
    }
  }
  if (!m.samples.empty()) m.value = summary_of(m.samples);
  file.measurements.push_back(std::move(m));
  return file;
}

// --- custom --------------------------------------------------------------------------------

Result<ResultFile> parse_custom(const json& rows, std::optional<Direction> tool_direction,
                                const std::string& prefix, const std::filesystem::path& origin) {
  ResultFile file{.format = "custom", .measurements = {}, .notes = {}};
  Collector collector;
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    std::string field = fmt::format("{}[{}]", prefix, i);
    if (!row.is_object())
      return field_error(origin, field, "expected an object, got {}", type_name(row));
    KILN_TRY(std::string name, string_at(row, "name", field + ".name", origin));
    KILN_TRY(std::string unit, string_at(row, "unit", field + ".unit", origin));
    Direction direction =
        is_throughput_unit(unit) ? Direction::bigger_is_better : Direction::smaller_is_better;
    if (tool_direction) direction = *tool_direction;
    if (row.contains("direction")) {
      KILN_TRY(std::string text, string_at(row, "direction", field + ".direction", origin));
      auto parsed = parse_direction(text);
      if (!parsed) return field_error(origin, field + ".direction", "{}", parsed.error().message);
      direction = *parsed;
    }
    std::string metric = "value";
    if (row.contains("metric")) {
      KILN_TRY(metric, string_at(row, "metric", field + ".metric", origin));
    }
    if (!seen.insert({name, metric}).second)
      return field_error(origin, field + ".name", "benchmark '{}' (metric '{}') appears twice",
                         name, metric);
    // Times are kept in ns (measurement.h), so a change of unit between runs is no change.
    auto scale = ns_per(unit);
    const bool is_time = scale.has_value();
    auto& m = collector.at(name, metric, is_time ? "ns" : unit, direction, field);
    KILN_TRY(double value, number_at(row, "value", field + ".value", origin));
    m.value = is_time ? value * *scale : value;
    auto samples = row.find("samples");
    // With samples, `value` is replaced by their summary (below): only its type matters.
    const bool has_samples = samples != row.end() && samples->is_array() && !samples->empty();
    if (is_time && !has_samples) KILN_TRY_VOID(positive_time(value, field + ".value", origin));
    if (samples != row.end()) {
      if (!samples->is_array())
        return field_error(origin, field + ".samples", "expected an array of numbers");
      for (std::size_t j = 0; j < samples->size(); ++j) {
        const auto& s = (*samples)[j];
        std::string at = fmt::format("{}.samples[{}]", field, j);
        if (!s.is_number() || !std::isfinite(s.get<double>()))
          return field_error(origin, at, "expected a number");
        if (is_time) KILN_TRY_VOID(positive_time(s.get<double>(), at, origin));
        m.samples.push_back(is_time ? s.get<double>() * *scale : s.get<double>());
      }
    }
    if (row.contains("threshold")) {
      KILN_TRY(double t, number_at(row, "threshold", field + ".threshold", origin));
      if (t <= 0 || t >= 1000)
        return field_error(origin, field + ".threshold", "expected a percentage in (0, 1000)");
      m.threshold_percent = t;
    }
  }
  // The summary of samples is summary_of(samples), whatever `value` said (it stays for files
  // without samples).
  file.measurements = collector.finish();
  return file;
}

bool looks_like_go_test(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    auto line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.starts_with("Benchmark")) return true;
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return false;
}

// The format of a parsed JSON document, by its shape.
Result<ResultFile> parse_json_root(const json& root, const std::filesystem::path& origin) {
  const std::string file = origin.string();
  if (root.is_array()) return parse_custom(root, std::nullopt, "", origin);
  auto benchmarks = root.find("benchmarks");
  if (benchmarks != root.end()) {
    if (!benchmarks->is_array())
      return field_error(origin, "benchmarks", "expected an array, got {}", type_name(*benchmarks));
    if (auto tool = root.find("tool"); tool != root.end()) {
      if (!tool->is_string()) return field_error(origin, "tool", "expected a string");
      auto direction = parse_direction(tool->get<std::string>());
      if (!direction) return field_error(origin, "tool", "{}", direction.error().message);
      return parse_custom(*benchmarks, *direction, "benchmarks", origin);
    }
    if (root.contains("context")) return parse_google_benchmark(root, origin);
    if (root.contains("machine_info")) return parse_pytest_benchmark(root, origin);
    // Without the header objects, tell by the first row.
    if (!benchmarks->empty() && (*benchmarks)[0].is_object()) {
      const auto& row = (*benchmarks)[0];
      if (row.contains("stats")) return parse_pytest_benchmark(root, origin);
      if (row.contains("real_time") || row.contains("run_type"))
        return parse_google_benchmark(root, origin);
      if (row.contains("unit") && row.contains("value"))
        return parse_custom(*benchmarks, std::nullopt, "benchmarks", origin);
    }
    if (benchmarks->empty()) return ResultFile{.format = "", .measurements = {}, .notes = {}};
    return field_error(origin, "benchmarks[0]",
                       "neither a Google Benchmark row (real_time), a pytest-benchmark row (stats) "
                       "nor a custom row (name, unit, value)");
  }
  if (root.contains("median") && root.contains("mean")) return parse_criterion(root, origin);
  return fail_at(SourceLocation{file, 0, 0},
                 "unknown benchmark JSON: expected \"benchmarks\" (Google Benchmark, "
                 "pytest-benchmark), \"mean\"/\"median\" (Criterion estimates) or an array of "
                 "{{name, unit, value}}");
}

}  // namespace

std::string_view to_string(Direction direction) {
  return direction == Direction::smaller_is_better ? "smaller_is_better" : "bigger_is_better";
}

Result<Direction> parse_direction(std::string_view text) {
  if (text == "smaller_is_better" || text == "smaller" || text == "customSmallerIsBetter")
    return Direction::smaller_is_better;
  if (text == "bigger_is_better" || text == "bigger" || text == "customBiggerIsBetter")
    return Direction::bigger_is_better;
  return fail(ErrorCode::invalid_input,
              "unknown direction '{}' (smaller_is_better, bigger_is_better, customSmallerIsBetter, "
              "customBiggerIsBetter)",
              text);
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  double upper = *middle;
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), middle);
  return (lower + upper) / 2;
}

Result<ResultFile> parse_results(std::string_view text, const std::filesystem::path& origin) {
  const std::string file = origin.string();
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return fail_at(SourceLocation{file, 0, 0}, "empty benchmark result file");
  if (text[first] != '{' && text[first] != '[') {
    if (looks_like_go_test(text)) return parse_go_test(text, origin);
    return fail_at(SourceLocation{file, 0, 0},
                   "not a benchmark result: expected JSON (Google Benchmark, pytest-benchmark, "
                   "Criterion, custom) or `go test -bench` output");
  }
  KILN_TRY(json root, core::parse_json_text(text, origin));
  // The parsers check every type before they read; a library exception that still gets here is
  // a bug, and it becomes an error of this file rather than the end of the process.
  Result<ResultFile> parsed = [&]() -> Result<ResultFile> {
    try {
      return parse_json_root(root, origin);
    } catch (const json::exception& e) {
      return fail_at(SourceLocation{file, 0, 0}, "unreadable benchmark JSON: {}", e.what());
    }
  }();
  if (!parsed) return parsed;
  if (parsed->measurements.empty()) {
    std::string skipped;
    for (const auto& note : parsed->notes) skipped += (skipped.empty() ? "" : "; ") + note;
    std::string field = root.is_object() && root.contains("benchmarks") ? "benchmarks: " : "";
    if (skipped.empty())
      return fail_at(SourceLocation{file, 0, 0}, "{}no benchmark results", field);
    return fail_at(SourceLocation{file, 0, 0}, "{}no benchmark results (every row skipped: {})",
                   field, skipped);
  }
  return parsed;
}

Result<ResultFile> parse_result_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(ErrorCode::invalid_input, "cannot read benchmark result file {}", path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_results(buffer.str(), path);
}

}  // namespace kiln::perf
