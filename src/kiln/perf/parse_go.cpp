// The text of `go test -bench`: "BenchmarkName-8  1000  1234 ns/op  56 B/op  2 allocs/op".
// With -count=N a benchmark's line appears N times: those are its samples.

#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <vector>

#include "kiln/perf/parse.h"

namespace kiln::perf {
namespace {

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && std::isspace(static_cast<unsigned char>(line[pos]))) ++pos;
    std::size_t start = pos;
    while (pos < line.size() && !std::isspace(static_cast<unsigned char>(line[pos]))) ++pos;
    if (pos > start) fields.push_back(line.substr(start, pos - start));
  }
  return fields;
}

std::optional<double> number_of(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

// "BenchmarkFoo/size=8-16" → "BenchmarkFoo/size=8": the -N suffix is GOMAXPROCS, a property
// of the machine (the testbed), not of the benchmark.
std::string_view strip_procs(std::string_view name) {
  auto dash = name.rfind('-');
  if (dash == std::string_view::npos || dash + 1 == name.size()) return name;
  for (auto c : name.substr(dash + 1))
    if (!std::isdigit(static_cast<unsigned char>(c))) return name;
  return name.substr(0, dash);
}

// Names go into JSON reports, which hold UTF-8 only.
bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = byte < 0x80           ? 1
                         : (byte >> 5) == 0x6  ? 2
                         : (byte >> 4) == 0xe  ? 3
                         : (byte >> 3) == 0x1e ? 4
                                               : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return false;
    i += length;
  }
  return true;
}

}  // namespace

Result<ResultFile> parse_go_test(std::string_view text, const std::filesystem::path& origin) {
  ResultFile file{.format = "go-test", .measurements = {}, .notes = {}};
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  std::string package;
  int line_number = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find('\n', pos);
    auto line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() + 1 : end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("pkg: ")) {
      package = std::string(line.substr(5));
      continue;
    }
    if (!line.starts_with("Benchmark")) continue;
    auto fields = fields_of(line);
    // A name alone is the line `go test -v` prints before the result; no result yet.
    if (fields.size() < 2) continue;
    SourceLocation where{origin.string(), line_number, 1};
    if (!number_of(fields[1]))
      // "BenchmarkX --- FAIL" and similar: not a result line.
      continue;
    if ((fields.size() - 2) % 2 != 0 || fields.size() < 4)
      return fail_at(where,
                     "benchmark line: expected NAME ITERATIONS followed by VALUE UNIT pairs");
    if (!valid_utf8(fields[0])) return fail_at(where, "benchmark name: not valid UTF-8");
    if (!valid_utf8(package)) return fail_at(where, "pkg: not valid UTF-8");
    std::string name(strip_procs(fields[0]));
    if (!package.empty()) name = package + "." + name;
    for (std::size_t i = 2; i + 1 < fields.size(); i += 2) {
      auto value = number_of(fields[i]);
      where.column = static_cast<int>(fields[i].data() - line.data()) + 1;
      if (!value) return fail_at(where, "benchmark value: expected a number, got '{}'", fields[i]);
      std::string unit(fields[i + 1]);
      std::string metric = unit;
      Direction direction = Direction::smaller_is_better;
      if (!valid_utf8(unit)) return fail_at(where, "benchmark unit: not valid UTF-8");
      if (unit == "ns/op") {
        if (*value <= 0)
          return fail_at(where, "benchmark value: a time must be positive, got {}", *value);
        metric = "time";
        unit = "ns";
      } else if (unit.ends_with("/s")) {
        direction = Direction::bigger_is_better;
      }
      auto key = std::make_pair(name, metric);
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, file.measurements.size()).first;
        file.measurements.push_back({.name = name,
                                     .metric = metric,
                                     .unit = unit,
                                     .direction = direction,
                                     .field = fmt::format("line {}", line_number)});
      }
      file.measurements[it->second].samples.push_back(*value);
    }
  }
  for (auto& m : file.measurements) m.value = summary_of(m.samples);
  if (file.measurements.empty())
    return fail_at(SourceLocation{origin.string(), 0, 0},
                   "no benchmark results in `go test -bench` output");
  return file;
}

}  // namespace kiln::perf
