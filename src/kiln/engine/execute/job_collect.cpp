// What a job yields while and after its steps run (job_run.h): its log lines, benchmark
// results and the perf gate, JUnit test results, and GPU telemetry with the memory budget.

#include <fmt/format.h>

#include "kiln/engine/collect/test_results.h"
#include "kiln/engine/execute/annotation_json.h"
#include "kiln/engine/execute/job_run.h"

namespace kiln::engine {
namespace {

// "80 B", "512 KiB", "1.5 MiB", "1 GiB": the log size limit's messages.
std::string format_size(std::uint64_t bytes) {
  constexpr const char* k_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  auto text = fmt::format("{:.1f}", value);
  if (text.ends_with(".0")) text.resize(text.size() - 2);
  return fmt::format("{} {}", text, k_units[unit]);
}

}  // namespace

store::LogStream JobRun::stream_of(std::string_view kind) {
  if (kind == "output") return store::LogStream::out;
  if (kind == "stderr") return store::LogStream::err;
  return store::LogStream::system;
}

// GitHub's raw log markers for lines that are not plain output.
std::string JobRun::stored_text(std::string_view kind, std::string_view text) {
  if (kind == "output" || kind == "stderr") return std::string(text);
  if (kind == "kiln") return std::string(text);
  return fmt::format("##[{}]{}", kind, text);
}

// The perf gate (benchmarks.h): results are stored after every step, judged at the end.
BenchmarkContext JobRun::benchmark_context() const {
  const auto& event = *setup_.event;
  std::string branch = event.is_branch()         ? event.ref_name()
                       : !event.head_ref.empty() ? event.head_ref
                                                 : event.ref;
  return {.repository = setup_.repo->name,
          .branch = branch,
          .default_branch = setup_.repo->default_branch,
          .commit = event.sha,
          .testbed = make_testbed(setup_.labels, setup_.gpus),
          .run_id = setup_.run_id,
          .job_id = setup_.job_row};
}

void JobRun::collect_benchmarks() {
  for (const auto& [kind, text] : benchmarks_->collect(benchmarks_file_, workspace_, run_as_)) {
    log_kiln(kind, text);
    if (kind == "error") failed_ = true;
  }
}

// JUnit XML the steps wrote (test_results.h): read once, after the last step.
void JobRun::collect_tests() {
  auto outcome = collect_test_results(
      *setup_.store, {setup_.repo->name, setup_.event->sha, setup_.run_id, setup_.job_row},
      test_results_file_, workspace_, run_as_);
  for (const auto& [kind, text] : outcome.lines) log_kiln(kind, text);
  test_totals_ = std::move(outcome.totals);
  // Failures of quarantined tests are counted apart: they did not fail the job.
  if (test_totals_.is_object()) {
    int quarantined = 0;
    for (const auto& c : outcome.cases)
      if ((c.status == "failed" || c.status == "error") &&
          quarantined_.contains(test_name(c.classname, c.name)))
        ++quarantined;
    test_totals_["quarantined"] = quarantined;
  }
  summary_.tests = test_totals_;
  for (auto& failure : outcome.failures) {
    failure.quarantined = quarantined_.contains(failure.name);
    for (auto* text : {&failure.name, &failure.message, &failure.details, &failure.file})
      *text = setup_.masker->mask(*text);
    summary_.test_failures.push_back(std::move(failure));
  }
  // The flip rule (quarantine.h): tests that flipped often enough are quarantined from now on.
  for (const auto& [kind, text] : apply_flip_rule(*setup_.store, setup_.repo->name, outcome.cases,
                                                  setup_.options->test_quarantine, store::now_ms()))
    log_kiln(kind, text);
}

void JobRun::gate_benchmarks() {
  auto verdict = benchmarks_->gate(job_env_);
  summary_.perf = verdict.report;
  for (const auto& [kind, text] : verdict.lines) log_kiln(kind, text);
  if (verdict.failed) {
    failed_ = true;
    summary_.reason = verdict.reason;
    if (!summary_.failure) summary_.failure = StepFailure{.kind = "gate"};
  }
}

// GPU telemetry (gpu_telemetry.h) while the steps run; the budget's verdict fails the job.
void JobRun::start_gpu_telemetry() {
  if (setup_.gpus.empty() || !setup_.make_sampler) return;
  JobTelemetryOptions options;
  options.sampler = setup_.make_sampler();
  if (!options.sampler) return;
  for (const auto& gpu : setup_.gpus) options.gpus.push_back(gpu.index);
  options.interval = setup_.telemetry.interval;
  options.deadline = setup_.options->gpu_health.provider_deadline;
  options.memory_budget_mib = setup_.gpu_memory_budget_mib;
  options.job_token = token_;
  options.store = setup_.store;
  options.writer.job_id = setup_.job_row;
  options.writer.gpus = setup_.gpus;
  telemetry_ = std::make_unique<JobTelemetry>(std::move(options));
}

void JobRun::stop_gpu_telemetry() {
  if (!telemetry_) return;
  auto outcome = telemetry_->stop();
  telemetry_.reset();
  if (!outcome.sample_error.empty()) log_kiln("warning", "GPU telemetry: " + outcome.sample_error);
  if (!outcome.store_error.empty())
    log_kiln("warning", "GPU telemetry: samples not stored: " + outcome.store_error);
  for (const auto& leak : outcome.leaks) log_kiln("warning", leak);
  if (!outcome.budget_failure.empty()) {
    log_kiln("error", outcome.budget_failure);
    failed_ = true;
    summary_.reason = outcome.budget_failure;
    if (!summary_.failure) summary_.failure = StepFailure{.kind = "gpu memory budget"};
  }
  summary_.gpu = gpu::summary_to_json(outcome.summary);
  setup_.recorder->set_job_extra(setup_.job_row, JobExtra::gpu, summary_.gpu);
}

// Lines of the job's log: to the store as they come, and to the observer.
void JobRun::add_annotation(const exec::Annotation& annotation) {
  std::lock_guard lock(log_mutex_);
  if (summary_.annotations.size() >= k_max_job_annotations) return;
  summary_.annotations.push_back(annotation);
  auto json = annotation_to_json(annotation);
  json["step"] = current_step_ ? nlohmann::json(*current_step_) : nullptr;
  annotations_.push_back(std::move(json));
}

void JobRun::log_line(std::string_view kind, std::string_view text, bool held) {
  std::lock_guard lock(log_mutex_);
  log_line_locked(current_step_, recent_lines_, {}, kind, text, held);
}

void JobRun::log_background_line(int step, std::string_view prefix, std::string_view kind,
                                 std::string_view text, bool held) {
  std::lock_guard lock(log_mutex_);
  log_line_locked(step, step_lines_[step], prefix, kind, text, held);
}

void JobRun::flush_log() {
  std::lock_guard lock(log_mutex_);
  flush_log_locked();
}

void JobRun::log_line_locked(std::optional<int> step, std::deque<std::string>& recent,
                             std::string_view prefix, std::string_view kind, std::string_view text,
                             bool held) {
  // The step's last lines, for the failure summary (record_failure).
  if (step && setup_.options->failure_lines > 0 &&
      (kind == "output" || kind == "stderr" || kind == "error" || kind == "warning" ||
       kind == "kiln")) {
    recent.push_back(kind == "error" || kind == "warning" ? fmt::format("{}: {}", kind, text)
                                                          : std::string(text));
    while (recent.size() > static_cast<size_t>(setup_.options->failure_lines)) recent.pop_front();
  }
  // kiln.yml jobs.max_log_size: past it the step's lines are counted, not stored or shown (the
  // recent lines above still follow them: a failure's summary shows how the step ended). kiln's
  // own messages and annotations, which say why the job ended, are still kept, up to
  // k_max_job_annotations of them.
  const std::uint64_t size = text.size() + 1;
  const std::uint64_t limit = setup_.options->max_log_bytes;
  if (log_dropped_lines_ > 0 || log_bytes_ + size > limit) {
    const bool says_why =
        kind == "kiln" || kind == "error" || kind == "warning" || kind == "notice";
    if (!says_why || kept_past_limit_ >= k_max_job_annotations) {
      if (log_dropped_lines_ == 0)
        store_and_show_locked(step, {}, "kiln",
                              fmt::format("The job's log reached its size limit of {} (kiln.yml "
                                          "jobs.max_log_size): later lines are counted, not "
                                          "stored or shown.",
                                          format_size(limit)));
      ++log_dropped_lines_;
      log_dropped_bytes_ += size;
      if (!held) flush_log_locked();
      return;
    }
    ++kept_past_limit_;
  } else {
    log_bytes_ += size;
  }
  store_and_show_locked(step, prefix, kind, text, held);
}

void JobRun::report_dropped_lines() {
  std::lock_guard lock(log_mutex_);
  summary_.log_dropped_lines = log_dropped_lines_;
  summary_.log_dropped_bytes = log_dropped_bytes_;
  if (log_dropped_lines_ == 0) return;
  store_and_show_locked(
      std::nullopt, {}, "kiln",
      fmt::format("{} {} ({}) past the job's log size limit of {} {} not stored or shown "
                  "(kiln.yml jobs.max_log_size).",
                  log_dropped_lines_, log_dropped_lines_ == 1 ? "line" : "lines",
                  format_size(log_dropped_bytes_), format_size(setup_.options->max_log_bytes),
                  log_dropped_lines_ == 1 ? "was" : "were"));
}

void JobRun::store_and_show_locked(std::optional<int> step, std::string_view prefix,
                                   std::string_view kind, std::string_view text, bool held) {
  store::LogLine& line = held_lines_.emplace_back();
  line.job_id = setup_.job_row;
  line.step_index = step;
  line.stream = stream_of(kind);
  line.text = stored_text(kind, text);
  line.time = store::now_ms();
  held_shown_.push_back(
      {std::string(kind), prefix.empty() ? std::string(text) : fmt::format("{}{}", prefix, text)});
  // A step's lines wait for the end of the pipe read they came in (exec::LogSink::flush); a
  // block is at most a few thousand lines.
  if (!held || held_lines_.size() >= k_max_held_lines) flush_log_locked();
}

void JobRun::flush_log_locked() {
  if (held_lines_.empty()) return;
  // Stored (durable against kill -9) before they are shown: store.h LogWriter.
  Status stored = log_ ? log_->append_all(held_lines_) : append_directly(held_lines_);
  if (!stored && !store_warned_) {
    store_warned_ = true;
    setup_.observer->job_line(shown_key(), "warning",
                              "cannot write the log to the store: " + stored.error().to_string());
  }
  setup_.observer->job_lines(shown_key(), held_shown_);
  held_lines_.clear();
  held_shown_.clear();
}

Status JobRun::append_directly(std::span<const store::LogLine> lines) {
  for (const auto& line : lines)
    if (auto stored = setup_.store->append_log(line); !stored)
      return std::unexpected(stored.error());
  return {};
}

void JobRun::log_kiln(std::string_view kind, const std::string& text) {
  log_line(kind, setup_.masker->mask(text));
}

}  // namespace kiln::engine
