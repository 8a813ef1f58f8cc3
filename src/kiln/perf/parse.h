#pragma once
// Benchmark result parsers. The format is detected from the content, never from the name:
//
//   google-benchmark  JSON object with "benchmarks" rows that have "run_type"/"time_unit"
//                     (--benchmark_format=json or --benchmark_out). Iteration rows of one
//                     run_name are its repetitions; aggregate rows (_mean, _median, _stddev,
//                     _cv) are used only when a benchmark has no iteration rows
//                     (--benchmark_report_aggregates_only), and then as a value, never as
//                     samples. Metrics: real_time, cpu_time (in ns), and every counter
//                     (items_per_second, bytes_per_second, user counters: bigger is better).
//   pytest-benchmark  JSON object with "benchmarks" rows that have "stats" (--benchmark-json);
//                     stats.data (--benchmark-save-data) are the samples, else stats.median.
//                     Metric "time" in ns.
//   go-test           text of `go test -bench` (with -count=N the repeated lines are the
//                     samples). Metrics by unit: ns/op as "time" in ns, B/op, allocs/op,
//                     MB/s, and custom b.ReportMetric units (".../s": bigger is better).
//   criterion         a Criterion estimates.json (target/criterion/<id>/new/estimates.json);
//                     the name comes from benchmark.json beside it (full_id), else the path;
//                     sample.json beside it gives the samples (time / iterations).
//   custom            JSON array [{name, unit, value, samples?, direction?, threshold?}], or
//                     {"tool": "customSmallerIsBetter"|"customBiggerIsBetter",
//                      "benchmarks": [...]}: github-action-benchmark's custom format.
//
// Every error is invalid_input, located at the file (and the line where the format has one),
// and names the field: "bench.json: error: benchmarks[2].real_time: expected a number".

#include <filesystem>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/perf/measurement.h"

namespace kiln::perf {

// Parses `text`, read from `origin` (the path, for messages and for Criterion's side files;
// may be a name that does not exist).
Result<ResultFile> parse_results(std::string_view text, const std::filesystem::path& origin);

// Reads and parses a file. A missing or unreadable file is invalid_input naming it.
Result<ResultFile> parse_result_file(const std::filesystem::path& path);

// The individual parsers, for tests: `text` must already be of the format.
Result<ResultFile> parse_go_test(std::string_view text, const std::filesystem::path& origin);

}  // namespace kiln::perf
