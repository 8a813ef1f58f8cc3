#pragma once
// What a benchmark result file says, in one shape for every format: a list of measurements,
// each one metric of one benchmark with its repetitions (samples) when the file has them.
// Parsers (parse.h) produce these; the store keeps them per (repository, benchmark, metric,
// branch, testbed); statistics (stats.h, compare.h) decide on them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::perf {

// Which way is better. Times, bytes and allocations: smaller; throughputs (x/s): bigger.
enum class Direction { smaller_is_better, bigger_is_better };

std::string_view to_string(Direction direction);  // "smaller_is_better" / "bigger_is_better"
// Accepts the names above, "smaller"/"bigger", and github-action-benchmark's tool names
// "customSmallerIsBetter"/"customBiggerIsBetter".
Result<Direction> parse_direction(std::string_view text);

struct Measurement {
  std::string name{};    // the benchmark: "BM_Copy/1024", "tests/test_io.py::test_read"
  std::string metric{};  // "real_time", "cpu_time", "time", "B/op", "items_per_second", "value"
  // Times (ns, us, ms, s) are normalised to "ns" whatever unit the file used, so a series
  // survives a change of --benchmark_time_unit or of a custom file's "unit"; other units are
  // kept as the file spells them, and must then stay the same across runs (gate.h: check_units).
  std::string unit{};
  Direction direction = Direction::smaller_is_better;
  // Repetitions, one value per repetition, in file order. Empty when the file only has a summary
  // (an aggregate row, a custom value without samples): then only `value` is known, and the
  // decision falls back to the history (compare.h). Aggregates are never put here.
  std::vector<double> samples{};
  // The summary: summary_of(samples) when there are samples, else the file's number.
  double value = 0;
  // Per-benchmark threshold override in percent (custom JSON "threshold"); empty: the default.
  std::optional<double> threshold_percent{};
  // Where in its file the benchmark's first row is, for messages: "[2]", "benchmarks[3]",
  // "line 12"; empty when unknown (a result read back from the store).
  std::string field{};
};

// A parsed file.
struct ResultFile {
  std::string format{};  // "google-benchmark", "pytest-benchmark", "go-test", "criterion", "custom"
  std::vector<Measurement> measurements{};
  // Rows that were skipped on purpose ("BM_x: error_occurred: out of memory"), for the log.
  std::vector<std::string> notes{};
};

// The median of `values` (0 for none).
double median_of(std::vector<double> values);

// The summary of a run's repetitions: their mean without the far outliers (stats.h:
// without_far_outliers). As efficient as the mean for normal noise, stable for bimodal noise
// (where the median jumps between the modes), and not moved by a preempted repetition.
double summary_of(const std::vector<double>& samples);

}  // namespace kiln::perf
