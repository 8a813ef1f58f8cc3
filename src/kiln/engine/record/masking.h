#pragma once
// The one masking point of a run (issue 26). Everything the engine writes to the store (runs,
// jobs and their names, matrices, outputs, messages and summaries, steps, log lines, test
// cases, benchmark results, artifacts, GPU samples and leases) goes through MaskingStore, and
// everything it tells its observer (the terminal) and returns (`kiln run --json`, `kiln
// serve`) through MaskingObserver and mask_report, each string replaced by the run's Masker
// (exec/masker.h: the registered secrets, ::add-mask:: values and their encoded forms). What
// reads the store afterwards (`kiln report` in every format, the API, the dashboard) can only
// see masked text.
//
// Strings are masked whole, JSON values recursively (keys too). Lookups that name a record by
// a string (find_artifact, the query of test cases and benchmark results) are masked the same
// way, so a name that held a secret is found under its masked form.

#include <nlohmann/json.hpp>

#include "kiln/engine/engine.h"
#include "kiln/exec/masker.h"
#include "kiln/store/store.h"

namespace kiln::engine {

template <class Json>
void mask_json(const exec::Masker& masker, Json& value);

void mask_report(const exec::Masker& masker, RunReport& report);

class MaskingObserver final : public RunObserver {
 public:
  MaskingObserver(RunObserver& inner, const exec::Masker& masker)
      : inner_(inner), masker_(masker) {}
  void run_started(const std::string& workflow_name, std::int64_t run_id) override;
  void job_started(const std::string& job_key) override;
  void job_line(const std::string& job_key, std::string_view kind, std::string_view text) override;
  void job_lines(const std::string& job_key, std::span<const ShownLine> lines) override;
  void job_finished(const JobSummary& job) override;
  void progress(int done, int total, const std::vector<std::string>& running) override;
  void warning(const std::string& text) override;

 private:
  RunObserver& inner_;
  const exec::Masker& masker_;
};

class MaskingStore final : public store::Store {
 public:
  MaskingStore(store::Store& inner, const exec::Masker& masker) : inner_(inner), masker_(masker) {}

  Result<store::Run> create_run(const store::Run& run) override;
  Status update_run(const store::Run& run) override;
  Status set_run_status(std::int64_t run_id, store::RunStatus status, store::TimeMs at) override {
    return inner_.set_run_status(run_id, status, at);
  }
  Result<store::Run> get_run(std::int64_t run_id) override { return inner_.get_run(run_id); }
  Result<std::vector<store::Run>> list_runs(const store::RunQuery& query) override {
    return inner_.list_runs(query);
  }
  Result<store::RunDetail> get_run_detail(std::int64_t run_id) override {
    return inner_.get_run_detail(run_id);
  }

  Result<std::int64_t> create_job(const store::Job& job) override;
  Status update_job(const store::Job& job) override;
  Status set_job_status(std::int64_t job_id, store::JobStatus status, store::TimeMs at) override {
    return inner_.set_job_status(job_id, status, at);
  }
  Result<store::Job> get_job(std::int64_t job_id) override { return inner_.get_job(job_id); }
  Result<std::vector<store::Job>> list_jobs(std::int64_t run_id) override {
    return inner_.list_jobs(run_id);
  }
  Result<std::vector<store::QueueSample>> list_queue_times() override {
    return inner_.list_queue_times();
  }

  Result<std::int64_t> create_step(const store::Step& step) override;
  Status update_step(const store::Step& step) override;
  Result<std::vector<store::Step>> list_steps(std::int64_t job_id) override {
    return inner_.list_steps(job_id);
  }

  Result<std::int64_t> append_log(const store::LogLine& line) override;
  Result<std::int64_t> append_logs(std::span<const store::LogLine> lines) override;
  Result<std::unique_ptr<store::LogWriter>> open_log_writer(std::int64_t job_id) override;
  Result<std::vector<store::LogChunk>> read_logs(const store::LogQuery& query) override {
    return inner_.read_logs(query);
  }

  Result<std::int64_t> create_artifact(const store::Artifact& artifact) override;
  Result<std::vector<store::Artifact>> list_artifacts(std::int64_t run_id) override {
    return inner_.list_artifacts(run_id);
  }
  Result<store::Artifact> find_artifact(std::int64_t run_id, std::string_view name) override {
    return inner_.find_artifact(run_id, masker_.mask(name));
  }
  Status delete_artifact(std::int64_t artifact_id) override {
    return inner_.delete_artifact(artifact_id);
  }
  Result<std::vector<store::Artifact>> list_expired_artifacts(store::TimeMs now) override {
    return inner_.list_expired_artifacts(now);
  }

  Result<std::vector<std::int64_t>> add_benchmark_results(
      std::span<const store::BenchmarkResult> results) override;
  Result<std::vector<store::BenchmarkResult>> list_benchmark_results(
      const store::BenchmarkQuery& query) override;
  Result<std::vector<std::int64_t>> add_test_cases(std::span<const store::TestCase> cases) override;
  Result<std::vector<store::TestCase>> list_test_cases(const store::TestCaseQuery& query) override;
  Status quarantine_test(const store::TestQuarantine& record) override {
    return inner_.quarantine_test(record);
  }
  Result<bool> release_test_quarantine(std::string_view repository, std::string_view test,
                                       store::TimeMs at) override {
    return inner_.release_test_quarantine(repository, test, at);
  }
  Result<std::vector<store::TestQuarantine>> list_test_quarantine(
      std::string_view repository) override {
    return inner_.list_test_quarantine(repository);
  }

  Result<std::vector<std::int64_t>> add_gpu_samples(
      std::span<const store::GpuSampleRecord> samples) override;
  Result<std::vector<store::GpuSampleRecord>> list_gpu_samples(std::int64_t job_id) override {
    return inner_.list_gpu_samples(job_id);
  }
  Status delete_gpu_samples(std::span<const std::int64_t> ids) override {
    return inner_.delete_gpu_samples(ids);
  }

  Result<std::vector<std::int64_t>> mark_interrupted(store::TimeMs now) override {
    return inner_.mark_interrupted(now);
  }

  Result<bool> acquire_gpu_leases(std::span<const store::GpuLease> leases) override;
  Status release_gpu_leases(std::string_view job_token) override {
    return inner_.release_gpu_leases(job_token);
  }
  Status set_gpu_lease_holder(std::string_view job_token, std::string_view holder) override {
    return inner_.set_gpu_lease_holder(job_token, masker_.mask(std::string(holder)));
  }
  Result<std::vector<store::GpuLease>> reclaim_gpu_leases() override {
    return inner_.reclaim_gpu_leases();
  }
  Result<std::vector<store::GpuLease>> list_gpu_leases() override {
    return inner_.list_gpu_leases();
  }
  Status quarantine_gpu(const store::GpuQuarantine& record) override;
  Result<bool> release_gpu_quarantine(std::string_view gpu_uuid) override {
    return inner_.release_gpu_quarantine(gpu_uuid);
  }
  Result<std::vector<store::GpuQuarantine>> list_gpu_quarantine() override {
    return inner_.list_gpu_quarantine();
  }
  Result<std::vector<store::GpuLease>> list_fleet_gpu_leases() override {
    return inner_.list_fleet_gpu_leases();
  }
  Result<std::vector<store::GpuQuarantine>> list_fleet_gpu_quarantine() override {
    return inner_.list_fleet_gpu_quarantine();
  }

  Result<std::optional<std::int64_t>> create_trigger(const store::Trigger& trigger) override {
    return inner_.create_trigger(trigger);
  }
  Status update_trigger(const store::Trigger& trigger) override;
  Result<store::Trigger> get_trigger(std::int64_t trigger_id) override {
    return inner_.get_trigger(trigger_id);
  }
  Result<std::vector<store::Trigger>> list_triggers(std::optional<store::TriggerStatus> status,
                                                    int limit) override {
    return inner_.list_triggers(status, limit);
  }
  Result<std::optional<std::string>> get_poll_head(std::string_view repository,
                                                   std::string_view ref) override {
    return inner_.get_poll_head(repository, ref);
  }
  Status set_poll_head(std::string_view repository, std::string_view ref,
                       std::string_view sha) override {
    return inner_.set_poll_head(repository, ref, sha);
  }
  Result<std::map<store::TriggerStatus, std::int64_t>> count_triggers() override {
    return inner_.count_triggers();
  }
  Result<bool> claim_trigger(std::int64_t trigger_id) override {
    return inner_.claim_trigger(trigger_id);
  }
  Status beat(store::TimeMs now) override { return inner_.beat(now); }
  Result<std::vector<std::int64_t>> list_orphaned_triggers(store::TimeMs stale_before) override {
    return inner_.list_orphaned_triggers(stale_before);
  }

 private:
  std::string mask(const std::string& text) const { return masker_.mask(text); }

  store::Store& inner_;
  const exec::Masker& masker_;
};

}  // namespace kiln::engine
