#pragma once
// Run reports (docs/reports.md): one JSON document built from the Store — the run, its jobs
// (status, duration, granted GPUs, GPU summary, steps, test totals), test failures, the slowest
// tests, flaky tests, the run's benchmark results with their recent history, and each job's
// stored GPU samples — and renderers for it: text, HTML (one self-contained
// file) and JUnit XML (Kiln's own jobs and steps, for another CI to consume).
//
// `kiln report RUN --format json` prints the document itself; the renderers read only it, so a
// field added to the document (telemetry, trends) is one change in build_run_report and one in
// each renderer that shows it.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/store/store.h"

namespace kiln::report {

using Json = nlohmann::ordered_json;

struct ReportOptions {
  int slowest = 10;            // the N slowest tests
  int max_failures = 100;      // failures listed (the totals count all)
  int benchmark_history = 20;  // points of each benchmark series' trend
  // GPU samples of a job, for the utilization/memory charts: an array of series (gpu_series).
  // Unset: the job's samples in the store (Store::list_gpu_samples); tests set it.
  std::function<Json(const store::Job&)> gpu_samples;
};

// A job's stored GPU samples as the report's series, one per GPU in index order:
// {"gpu": "0", "index": 0, "uuid": "GPU-...", "memory_total_mib": M|null, "points": [{"t": ms,
//  "util": %|null, "mem_util": %|null, "mem_mib": M, "power_w": W|null, "temp_c": C|null,
//  "sm_clock_mhz": MHz|null, "throttle": bits}, ...]} (points in time order). Every job of the
// document carries its series as "gpu_samples" and their total number of points as
// "gpu_sample_count".
Json gpu_series(const std::vector<store::GpuSampleRecord>& samples);

// A job's queue time (store/records.h JobQueueTime), as the report's jobs, `kiln run --json` and
// the API carry it: {"priority": class, "queued_at": ms|null, "seconds": s|null (null: it did not
// start), "waited": {"gpus": s, "priority": s, ...} (the reasons it waited for, each in seconds),
// "gpu_model": model of its GPUs ("" for none)}.
Json queue_json(const store::JobQueueTime& queue);

// not_found when the run does not exist.
Result<Json> build_run_report(store::Store& store, std::int64_t run_id,
                              const ReportOptions& options = {});

std::string render_text(const Json& report);
std::string render_html(const Json& report);
std::string render_junit(const Json& report);

// A measured number for a reader: at most 3 decimals, trailing zeros dropped ("1.919", "2",
// "0.5"), 3 significant digits below 0.001 ("0.000123"), the unit after a space ("1.919 ms";
// none before "%" or a "/s"-style unit). Text, HTML, JUnit and the dashboard API use it.
std::string format_number(double value, std::string_view unit = {});
// A report field as text: strings as they are, null as "", floats by format_number, the rest
// as JSON.
std::string format_value(const Json& value);

}  // namespace kiln::report
