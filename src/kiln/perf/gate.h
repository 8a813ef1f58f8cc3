#pragma once
// The perf gate: the decision of compare.h applied to every metric of a result set, against
// another result set (kiln bench compare) or against the history in the store (the engine and
// kiln bench gate), and the table it reports (text and JSON; docs/perf-gate.md).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/perf/compare.h"
#include "kiln/perf/measurement.h"
#include "kiln/store/store.h"

namespace kiln::perf {

struct GateOptions {
  DecisionOptions decision;
  // Per-benchmark thresholds (relative, 0.10 for 10%) by benchmark name; they win over the
  // result file's own "threshold" and over decision.threshold.
  std::map<std::string, double> thresholds;
  int history_limit = 30;  // how many recent baseline results make the history
};

struct GateRow {
  std::string benchmark;
  std::string metric;
  std::string unit;
  Direction direction = Direction::smaller_is_better;
  double threshold = 0.05;
  std::size_t baseline_samples = 0;  // how many repetitions each side had
  std::size_t current_samples = 0;
  std::size_t history = 0;  // how many past results the baseline had
  Comparison comparison;
  // The latest change point of the history followed by the current value (change_points.h),
  // when there is one: where the level last stepped, which a slow drift or a step merged
  // earlier leaves behind. Reported, never a failure by itself.
  struct LastChange {
    std::string commit;  // of the first result at the new level
    double change = 0;   // relative, signed
    double p_value = 1;
    std::size_t runs_ago = 0;  // results between it and the current one (at least 3)
  };
  std::optional<LastChange> last_change;
  // The commit of the first run of the baseline when it starts after a change point of the
  // history (compare.h: baseline_start), else empty.
  std::string baseline_from;
  // What the comparison could not see, for the reader: "run-to-run noise unknown ...".
  std::string note;
};

struct GateReport {
  std::vector<GateRow> rows;
  int count(Verdict verdict) const;
  bool failed() const { return count(Verdict::regression) > 0; }
};

// Where the history of a result set lives: the series of the same repository and testbed on
// the baseline branch (the default branch, usually), without the results of `exclude_run_id`
// (the run being judged).
struct HistoryScope {
  std::string repository;
  std::string branch;
  std::string testbed;
  std::optional<std::int64_t> exclude_run_id;
  std::optional<std::int64_t> up_to_id;  // only results stored at or before this one
};

// Every metric of `current` against the same (benchmark, metric) of `base`: the rank test
// when both have repetitions, else no-baseline (one value against one value decides nothing).
// One run a side cannot show run-to-run noise: such rows carry a note saying so. A unit that
// differs and does not convert (time units do) is invalid_input naming the file and field.
Result<GateReport> compare_sets(const std::vector<Measurement>& base,
                                const std::vector<Measurement>& current,
                                const GateOptions& options);

// Every metric of `current` against its history in the store; `appended`: results that end the
// history as its newest run (kiln bench compare --history with a BASE file). History in another
// time unit is converted; another unit is invalid_input.
Result<GateReport> gate_against_history(store::Store& store, const HistoryScope& scope,
                                        const std::vector<Measurement>& current,
                                        const GateOptions& options,
                                        const std::vector<Measurement>& appended = {});

// How many of `unit` one `stored` is worth (1 when equal; time units convert), or an error
// naming `source`, the measurement's field and both units: a benchmark keeps its unit.
Result<double> unit_factor(const Measurement& m, const std::string& stored,
                           const std::string& source);

// The units of `measurements` (read from `source`) against the newest stored result of the
// same repository, benchmark, metric and testbed: convertible or the same, else invalid_input.
Status check_units(store::Store& store, const std::string& repository, const std::string& testbed,
                   const std::vector<Measurement>& measurements, const std::string& source);

// Stored results (a run's or a job's) against the history of their own series: the same
// repository and testbed as each record, on `baseline_branch`, without the records' run.
Result<GateReport> gate_records(store::Store& store,
                                const std::vector<store::BenchmarkResult>& records,
                                const std::string& baseline_branch, const GateOptions& options);

// The table: benchmark, metric, baseline, current, change %, p-value or interval, verdict.
std::string format_table(const GateReport& report);
// {"passed", "regressions", "improvements", "too_noisy", "rows": [...]}: docs/perf-gate.md.
nlohmann::ordered_json to_json(const GateReport& report);

// Between the parsers' measurements and the store's rows.
struct ResultContext {
  std::string repository;
  std::string branch;
  std::string testbed;
  std::string commit_sha;
  std::optional<std::int64_t> run_id;
  std::optional<std::int64_t> job_id;
  std::string source;
  std::string format;
  store::TimeMs time = 0;
};
store::BenchmarkResult to_record(const Measurement& measurement, const ResultContext& context);
Measurement from_record(const store::BenchmarkResult& record);

// "1.234 ms" for a value in ns, "12.3 items/s", "42" for an empty unit: for tables.
std::string format_value(double value, const std::string& unit);

}  // namespace kiln::perf
