#include "kiln/engine/record/masking.h"

namespace kiln::engine {
namespace {

using exec::Masker;

void mask_in_place(const Masker& masker, std::string& text) { text = masker.mask(text); }

void mask_map(const Masker& masker, std::map<std::string, std::string>& values) {
  std::map<std::string, std::string> masked;
  for (auto& [key, value] : values) masked.emplace(masker.mask(key), masker.mask(value));
  values = std::move(masked);
}

void mask_summary(const Masker& masker, JobSummary& job) {
  for (auto* text : {&job.key, &job.job_id, &job.name, &job.reason}) mask_in_place(masker, *text);
  for (auto& label : job.labels) mask_in_place(masker, label);
  mask_json(masker, job.matrix);
  mask_json(masker, job.perf);
  mask_json(masker, job.gpu);
  mask_map(masker, job.outputs);
  for (auto& step : job.steps) {
    mask_in_place(masker, step.name);
    if (step.id) mask_in_place(masker, *step.id);
    mask_map(masker, step.outputs);
  }
}

store::Job masked_job(const Masker& masker, store::Job job) {
  for (auto* text : {&job.key, &job.workflow_job_id, &job.name, &job.message})
    mask_in_place(masker, *text);
  for (auto* value : {&job.matrix, &job.labels, &job.outputs, &job.extra})
    mask_json(masker, *value);
  return job;
}

store::Run masked_run(const Masker& masker, store::Run run) {
  for (auto* text :
       {&run.repository, &run.workflow_path, &run.workflow_name, &run.event, &run.ref, &run.sha})
    mask_in_place(masker, *text);
  mask_json(masker, run.extra);
  return run;
}

store::Step masked_step(const Masker& masker, store::Step step) {
  mask_in_place(masker, step.name);
  mask_json(masker, step.outputs);
  return step;
}

store::LogLine masked_line(const Masker& masker, store::LogLine line) {
  mask_in_place(masker, line.text);
  return line;
}

}  // namespace

template <class Json>
void mask_json(const Masker& masker, Json& value) {
  if (value.is_string()) {
    value = masker.mask(value.template get_ref<const std::string&>());
  } else if (value.is_array()) {
    for (auto& item : value) mask_json(masker, item);
  } else if (value.is_object()) {
    Json masked = Json::object();
    for (auto& [key, item] : value.items()) {
      mask_json(masker, item);
      masked[masker.mask(key)] = std::move(item);
    }
    value = std::move(masked);
  }
}
template void mask_json(const Masker&, nlohmann::json&);
template void mask_json(const Masker&, nlohmann::ordered_json&);

void mask_report(const Masker& masker, RunReport& report) {
  for (auto& run : report.runs) {
    run.workflow_path = masker.mask(run.workflow_path.string());
    mask_in_place(masker, run.workflow_name);
    for (auto& job : run.jobs) mask_summary(masker, job);
  }
  for (auto& [workflow, reason] : report.not_triggered) {
    mask_in_place(masker, workflow);
    mask_in_place(masker, reason);
  }
}

void MaskingObserver::run_started(const std::string& workflow_name, std::int64_t run_id) {
  inner_.run_started(masker_.mask(workflow_name), run_id);
}
void MaskingObserver::job_started(const std::string& job_key) {
  inner_.job_started(masker_.mask(job_key));
}
void MaskingObserver::job_lines(const std::string& job_key, std::span<const ShownLine> lines) {
  std::vector<ShownLine> masked;
  masked.reserve(lines.size());
  for (const auto& line : lines) masked.push_back({line.kind, masker_.mask(line.text)});
  inner_.job_lines(masker_.mask(job_key), masked);
}

void MaskingObserver::job_line(const std::string& job_key, std::string_view kind,
                               std::string_view text) {
  inner_.job_line(masker_.mask(job_key), kind, masker_.mask(text));
}
void MaskingObserver::job_finished(const JobSummary& job) {
  JobSummary masked = job;
  mask_summary(masker_, masked);
  inner_.job_finished(masked);
}
void MaskingObserver::progress(int done, int total, const std::vector<std::string>& running) {
  std::vector<std::string> masked;
  for (const auto& key : running) masked.push_back(masker_.mask(key));
  inner_.progress(done, total, masked);
}
void MaskingObserver::warning(const std::string& text) { inner_.warning(masker_.mask(text)); }

Result<store::Run> MaskingStore::create_run(const store::Run& run) {
  return inner_.create_run(masked_run(masker_, run));
}
Status MaskingStore::update_run(const store::Run& run) {
  return inner_.update_run(masked_run(masker_, run));
}
Result<std::int64_t> MaskingStore::create_job(const store::Job& job) {
  return inner_.create_job(masked_job(masker_, job));
}
Status MaskingStore::update_job(const store::Job& job) {
  return inner_.update_job(masked_job(masker_, job));
}
Result<std::int64_t> MaskingStore::create_step(const store::Step& step) {
  return inner_.create_step(masked_step(masker_, step));
}
Status MaskingStore::update_step(const store::Step& step) {
  return inner_.update_step(masked_step(masker_, step));
}
Result<std::int64_t> MaskingStore::append_log(const store::LogLine& line) {
  return inner_.append_log(masked_line(masker_, line));
}
Result<std::int64_t> MaskingStore::append_logs(std::span<const store::LogLine> lines) {
  std::vector<store::LogLine> masked;
  masked.reserve(lines.size());
  for (const auto& line : lines) masked.push_back(masked_line(masker_, line));
  return inner_.append_logs(masked);
}

namespace {

// The inner store's writer, fed masked lines (the journal holds only what the store may).
class MaskingLogWriter final : public store::LogWriter {
 public:
  MaskingLogWriter(std::unique_ptr<store::LogWriter> inner, const exec::Masker& masker)
      : inner_(std::move(inner)), masker_(masker) {}
  Status append(const store::LogLine& line) override {
    return inner_->append(masked_line(masker_, line));
  }
  Status append_all(std::span<const store::LogLine> lines) override {
    std::vector<store::LogLine> masked;
    masked.reserve(lines.size());
    for (const auto& line : lines) masked.push_back(masked_line(masker_, line));
    return inner_->append_all(masked);
  }
  Status flush() override { return inner_->flush(); }
  Status close() override { return inner_->close(); }

 private:
  std::unique_ptr<store::LogWriter> inner_;
  const exec::Masker& masker_;
};

}  // namespace

Result<std::unique_ptr<store::LogWriter>> MaskingStore::open_log_writer(std::int64_t job_id) {
  KILN_TRY(auto inner, inner_.open_log_writer(job_id));
  return std::unique_ptr<store::LogWriter>(
      std::make_unique<MaskingLogWriter>(std::move(inner), masker_));
}

// An artifact whose name held a secret is stored as its masked name; its files stay where the
// upload put them (`path` is where they are, and is masked in the record as well, so that the
// record says nothing the name may not: such an artifact cannot be downloaded by the API).
Result<std::int64_t> MaskingStore::create_artifact(const store::Artifact& artifact) {
  store::Artifact masked = artifact;
  mask_in_place(masker_, masked.name);
  mask_in_place(masker_, masked.path);
  return inner_.create_artifact(masked);
}

Result<std::vector<std::int64_t>> MaskingStore::add_benchmark_results(
    std::span<const store::BenchmarkResult> results) {
  std::vector<store::BenchmarkResult> masked(results.begin(), results.end());
  for (auto& result : masked) {
    for (auto* text :
         {&result.repository, &result.benchmark, &result.metric, &result.unit, &result.direction,
          &result.branch, &result.testbed, &result.commit_sha, &result.source, &result.format})
      mask_in_place(masker_, *text);
    mask_json(masker_, result.extra);
  }
  return inner_.add_benchmark_results(masked);
}

Result<std::vector<store::BenchmarkResult>> MaskingStore::list_benchmark_results(
    const store::BenchmarkQuery& query) {
  store::BenchmarkQuery masked = query;
  for (auto* text :
       {&masked.repository, &masked.benchmark, &masked.metric, &masked.branch, &masked.testbed})
    mask_in_place(masker_, *text);
  return inner_.list_benchmark_results(masked);
}

Result<std::vector<std::int64_t>> MaskingStore::add_test_cases(
    std::span<const store::TestCase> cases) {
  std::vector<store::TestCase> masked(cases.begin(), cases.end());
  for (auto& test : masked)
    for (auto* text : {&test.repository, &test.commit_sha, &test.suite, &test.classname, &test.name,
                       &test.status, &test.message, &test.details, &test.output, &test.file})
      mask_in_place(masker_, *text);
  return inner_.add_test_cases(masked);
}

Result<std::vector<store::TestCase>> MaskingStore::list_test_cases(
    const store::TestCaseQuery& query) {
  store::TestCaseQuery masked = query;
  for (auto* text : {&masked.repository, &masked.classname, &masked.name})
    mask_in_place(masker_, *text);
  return inner_.list_test_cases(masked);
}

Result<std::vector<std::int64_t>> MaskingStore::add_gpu_samples(
    std::span<const store::GpuSampleRecord> samples) {
  std::vector<store::GpuSampleRecord> masked(samples.begin(), samples.end());
  for (auto& sample : masked) mask_json(masker_, sample.processes);
  return inner_.add_gpu_samples(masked);
}

Result<bool> MaskingStore::acquire_gpu_leases(std::span<const store::GpuLease> leases) {
  std::vector<store::GpuLease> masked(leases.begin(), leases.end());
  for (auto& lease : masked) mask_in_place(masker_, lease.holder);
  return inner_.acquire_gpu_leases(masked);
}

Status MaskingStore::quarantine_gpu(const store::GpuQuarantine& record) {
  store::GpuQuarantine masked = record;
  mask_in_place(masker_, masked.reason);
  return inner_.quarantine_gpu(masked);
}

Status MaskingStore::update_trigger(const store::Trigger& trigger) {
  store::Trigger masked = trigger;
  mask_in_place(masker_, masked.message);
  return inner_.update_trigger(masked);
}

}  // namespace kiln::engine
