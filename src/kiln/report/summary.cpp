// build_run_report: the report document from the Store (report.h).

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "kiln/report/report.h"

namespace kiln::report {
namespace {

std::int64_t duration_of(store::TimeMs started, store::TimeMs finished) {
  return started > 0 && finished >= started ? finished - started : -1;
}

std::string conclusion_text(const std::optional<store::Conclusion>& conclusion) {
  return conclusion ? std::string(store::to_string(*conclusion)) : std::string();
}

std::string test_id(const store::TestCase& c) {
  return c.classname.empty() ? c.name : c.classname + "::" + c.name;
}

template <class T>
Json or_null(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

Json gpu_series(const std::vector<store::GpuSampleRecord>& samples) {
  Json series = Json::array();
  for (const auto& s : samples) {  // by GPU index, then time (Store::list_gpu_samples)
    if (series.empty() || series.back()["index"].get<int>() != s.gpu_index)
      series.push_back({{"gpu", std::to_string(s.gpu_index)},
                        {"index", s.gpu_index},
                        {"uuid", s.gpu_uuid},
                        {"memory_total_mib", or_null(s.memory_total_mib)},
                        {"points", Json::array()}});
    series.back()["points"].push_back({{"t", s.time},
                                       {"util", or_null(s.utilization_pct)},
                                       {"mem_util", or_null(s.memory_utilization_pct)},
                                       {"mem_mib", s.memory_used_mib},
                                       {"power_w", or_null(s.power_w)},
                                       {"temp_c", or_null(s.temperature_c)},
                                       {"sm_clock_mhz", or_null(s.sm_clock_mhz)},
                                       {"throttle", s.throttle_reasons}});
  }
  return series;
}

Json queue_json(const store::JobQueueTime& queue) {
  Json waited = Json::object();
  for (const auto& [reason, ms] : queue.reasons_ms)
    waited[reason] = static_cast<double>(ms) / 1000.0;
  return {{"priority", queue.priority},
          {"queued_at", queue.queued_at > 0 ? Json(queue.queued_at) : Json(nullptr)},
          {"seconds",
           queue.waited_ms ? Json(static_cast<double>(*queue.waited_ms) / 1000.0) : Json(nullptr)},
          {"waited", std::move(waited)},
          {"gpu_model", queue.gpu_model}};
}

Result<Json> build_run_report(store::Store& store, std::int64_t run_id,
                              const ReportOptions& options) {
  KILN_TRY(auto detail, store.get_run_detail(run_id));
  const auto& run = detail.run;
  Json report;
  report["kiln_report"] = 1;
  report["run"] = {{"id", run.id},
                   {"number", run.number},
                   {"repository", run.repository},
                   {"workflow", run.workflow_path},
                   {"name", run.workflow_name},
                   {"event", run.event},
                   {"ref", run.ref},
                   {"sha", run.sha},
                   {"status", store::to_string(run.status)},
                   {"created_at", run.created_at},
                   {"started_at", run.started_at},
                   {"finished_at", run.finished_at},
                   {"duration_ms", duration_of(run.started_at, run.finished_at)}};

  store::TestCaseQuery query;
  query.run_id = run_id;
  KILN_TRY(auto cases, store.list_test_cases(query));
  std::map<std::int64_t, std::string> job_names;
  for (const auto& [job, steps] : detail.jobs)
    job_names[job.id] = job.name.empty() ? job.key : job.name;

  Json jobs = Json::array();
  for (const auto& [job, steps] : detail.jobs) {
    Json row = {{"id", job.id},
                {"key", job.key},
                {"name", job_names[job.id]},
                {"status", store::to_string(job.status)},
                {"conclusion", conclusion_text(job.conclusion)},
                {"started_at", job.started_at},
                {"finished_at", job.finished_at},
                {"duration_ms", duration_of(job.started_at, job.finished_at)},
                {"message", job.message},
                {"failure_class", job.failure_class == store::FailureClass::none
                                      ? Json(nullptr)
                                      : Json(std::string(store::to_string(job.failure_class)))},
                {"failure_evidence", job.failure_evidence},
                {"labels", job.labels.is_array() ? Json(job.labels) : Json::array()}};
    row["queue"] = queue_json(job.queue);
    row["gpus"] = job.extra.contains("gpus") ? Json(job.extra["gpus"]) : Json::array();
    // The telemetry's per-job summary (peak/mean memory, utilization, energy...), when present.
    row["gpu_summary"] = job.extra.contains("gpu") ? Json(job.extra["gpu"]) : Json(nullptr);
    // The job's $GITHUB_STEP_SUMMARY Markdown (masked when stored), "" when it wrote none.
    row["step_summary"] =
        job.extra.contains("step_summary") && job.extra["step_summary"].is_string()
            ? Json(job.extra["step_summary"])
            : Json("");
    // The lines kiln.yml jobs.max_log_size kept out of the log: counted, not stored.
    row["log_dropped_lines"] =
        job.extra.contains("log_dropped") && job.extra["log_dropped"].is_object()
            ? Json(job.extra["log_dropped"].value("lines", std::uint64_t{0}))
            : Json(0);
    Json step_rows = Json::array();
    for (const auto& step : steps)
      step_rows.push_back({{"index", step.index},
                           {"name", step.name},
                           {"status", store::to_string(step.status)},
                           {"conclusion", conclusion_text(step.conclusion)},
                           {"exit_code", step.exit_code ? Json(*step.exit_code) : Json(nullptr)},
                           {"duration_ms", duration_of(step.started_at, step.finished_at)}});
    row["steps"] = std::move(step_rows);
    Json totals = {{"total", 0},   {"passed", 0}, {"failed", 0},   {"errors", 0},
                   {"skipped", 0}, {"flaky", 0},  {"seconds", 0.0}};
    for (const auto& c : cases) {
      if (c.job_id != job.id) continue;
      totals["total"] = totals["total"].get<int>() + 1;
      const char* key = c.status == "passed"   ? "passed"
                        : c.status == "failed" ? "failed"
                        : c.status == "error"  ? "errors"
                                               : "skipped";
      totals[key] = totals[key].get<int>() + 1;
      if (c.flaky) totals["flaky"] = totals["flaky"].get<int>() + 1;
      totals["seconds"] = totals["seconds"].get<double>() + c.seconds;
    }
    row["tests"] = std::move(totals);
    Json samples = Json::array();
    if (options.gpu_samples) {
      samples = options.gpu_samples(job);
    } else {
      KILN_TRY(auto stored, store.list_gpu_samples(job.id));
      samples = gpu_series(stored);
    }
    if (!samples.is_array()) samples = Json::array();
    std::size_t count = 0;
    for (const auto& series : samples) count += series.value("points", Json::array()).size();
    row["gpu_sample_count"] = count;
    row["gpu_samples"] = std::move(samples);
    jobs.push_back(std::move(row));
  }
  report["jobs"] = std::move(jobs);

  Json tests = {{"total", 0},   {"passed", 0}, {"failed", 0},   {"errors", 0},
                {"skipped", 0}, {"flaky", 0},  {"seconds", 0.0}};
  for (const auto& job : report["jobs"])
    for (const char* key : {"total", "passed", "failed", "errors", "skipped", "flaky"})
      tests[key] = tests[key].get<int>() + job["tests"][key].get<int>();
  for (const auto& job : report["jobs"])
    tests["seconds"] = tests["seconds"].get<double>() + job["tests"]["seconds"].get<double>();
  // The repository's tests in quarantine now (docs/failures.md): listed with whether they failed
  // in this run, and their failures here marked, since they did not fail a job. Test results
  // name the repository as jobs see it (owner/repo), which the run row may not (a path).
  std::map<std::string, store::TestQuarantine> in_quarantine;
  const store::TimeMs now = store::now_ms();
  std::set<std::string> repositories;
  for (const auto& c : cases) repositories.insert(c.repository);
  for (const auto& repository : repositories) {
    KILN_TRY(auto quarantine_records, store.list_test_quarantine(repository));
    for (auto& record : quarantine_records)
      if (record.active(now)) in_quarantine.emplace(record.test, std::move(record));
  }
  Json failures = Json::array(), flaky = Json::array();
  std::map<std::string, Json> quarantined_failing;  // test -> the jobs where it failed
  for (const auto& c : cases) {
    if ((c.status == "failed" || c.status == "error") && in_quarantine.contains(test_id(c))) {
      auto& jobs_failed = quarantined_failing[test_id(c)];
      if (jobs_failed.is_null()) jobs_failed = Json::array();
      jobs_failed.push_back(job_names[c.job_id]);
    }
    if ((c.status == "failed" || c.status == "error") &&
        static_cast<int>(failures.size()) < options.max_failures)
      failures.push_back({{"job", job_names[c.job_id]},
                          {"test", test_id(c)},
                          {"status", c.status},
                          {"message", c.message},
                          {"details", c.details},
                          {"file", c.file},
                          {"quarantined", in_quarantine.contains(test_id(c))}});
    if (c.flaky) flaky.push_back({{"job", job_names[c.job_id]}, {"test", test_id(c)}});
  }
  std::vector<const store::TestCase*> by_time;
  for (const auto& c : cases) by_time.push_back(&c);
  std::stable_sort(by_time.begin(), by_time.end(),
                   [](const auto* a, const auto* b) { return a->seconds > b->seconds; });
  Json slowest = Json::array();
  for (const auto* c : by_time) {
    if (static_cast<int>(slowest.size()) >= options.slowest) break;
    slowest.push_back({{"job", job_names[c->job_id]},
                       {"test", test_id(*c)},
                       {"seconds", c->seconds},
                       {"status", c->status}});
  }
  tests["failures"] = std::move(failures);
  tests["slowest"] = std::move(slowest);
  tests["flaky_tests"] = std::move(flaky);
  Json quarantined = Json::array();
  for (const auto& [test, record] : in_quarantine) {
    auto failing = quarantined_failing.find(test);
    quarantined.push_back(
        {{"test", test},
         {"reason", record.reason},
         {"by", record.manual ? "manual" : "flips"},
         {"since", record.since},
         {"expires_at", record.expires_at},
         {"failed_in", failing == quarantined_failing.end() ? Json::array() : failing->second}});
  }
  tests["quarantined_tests"] = std::move(quarantined);
  report["tests"] = std::move(tests);

  // The run's benchmark results, each with the recent values of its series (same repository,
  // benchmark, metric, branch and testbed) for a trend line.
  store::BenchmarkQuery bench_query;
  bench_query.run_id = run_id;
  KILN_TRY(auto results, store.list_benchmark_results(bench_query));
  Json benchmarks = Json::array();
  for (const auto& r : results) {
    store::BenchmarkQuery series;
    series.repository = r.repository;
    series.benchmark = r.benchmark;
    series.metric = r.metric;
    series.branch = r.branch;
    series.testbed = r.testbed;
    series.limit = options.benchmark_history;
    Json history = Json::array(), history_text = Json::array();
    if (auto points = store.list_benchmark_results(series))
      for (const auto& p : *points) {
        history.push_back(p.value);
        history_text.push_back(format_number(p.value, r.unit));
      }
    benchmarks.push_back({{"job", r.job_id ? job_names[*r.job_id] : std::string()},
                          {"benchmark", r.benchmark},
                          {"metric", r.metric},
                          {"value", r.value},
                          {"unit", r.unit},
                          {"value_text", format_number(r.value, r.unit)},
                          {"direction", r.direction},
                          {"branch", r.branch},
                          {"testbed", r.testbed},
                          {"history", std::move(history)},
                          {"history_text", std::move(history_text)}});
  }
  report["benchmarks"] = std::move(benchmarks);
  return report;
}

}  // namespace kiln::report
