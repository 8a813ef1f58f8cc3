#pragma once
// Internal to the SQLite store: the SqliteStore class, whose members are defined in
// sqlite_store.cpp (runs, jobs, steps, opening), sqlite_store_logs.cpp (logs, artifacts,
// crash recovery) and sqlite_store_benchmarks.cpp (benchmark results), sqlite_store_tests.cpp (test
// results), sqlite_store_gpu_samples.cpp (GPU samples).

#include <string>
#include <string_view>
#include <unordered_map>

#include "kiln/core/thread_annotations.h"
#include "kiln/store/sqlite.h"
#include "kiln/store/store.h"

namespace kiln::store {

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(sqlite::Database db);

  Result<Run> create_run(const Run& run) override;
  Status update_run(const Run& run) override;
  Status set_run_status(std::int64_t run_id, RunStatus status, TimeMs at) override;
  Result<Run> get_run(std::int64_t run_id) override;
  Result<std::vector<Run>> list_runs(const RunQuery& query) override;
  Result<RunDetail> get_run_detail(std::int64_t run_id) override;

  Result<std::int64_t> create_job(const Job& job) override;
  Status update_job(const Job& job) override;
  Status set_job_status(std::int64_t job_id, JobStatus status, TimeMs at) override;
  Result<Job> get_job(std::int64_t job_id) override;
  Result<std::vector<Job>> list_jobs(std::int64_t run_id) override;

  Result<std::int64_t> create_step(const Step& step) override;
  Status update_step(const Step& step) override;
  Result<std::vector<Step>> list_steps(std::int64_t job_id) override;

  Result<std::int64_t> append_log(const LogLine& line) override;
  Result<std::int64_t> append_logs(std::span<const LogLine> lines) override;
  Result<std::vector<LogChunk>> read_logs(const LogQuery& query) override;
  Result<std::unique_ptr<LogWriter>> open_log_writer(std::int64_t job_id) override;

  Result<std::int64_t> create_artifact(const Artifact& artifact) override;
  Result<std::vector<Artifact>> list_artifacts(std::int64_t run_id) override;
  Result<Artifact> find_artifact(std::int64_t run_id, std::string_view name) override;
  Status delete_artifact(std::int64_t artifact_id) override;
  Result<std::vector<Artifact>> list_expired_artifacts(TimeMs now) override;

  Result<std::vector<std::int64_t>> add_benchmark_results(
      std::span<const BenchmarkResult> results) override;
  Result<std::vector<BenchmarkResult>> list_benchmark_results(const BenchmarkQuery& query) override;

  Result<std::vector<std::int64_t>> add_test_cases(std::span<const TestCase> cases) override;
  Result<std::vector<TestCase>> list_test_cases(const TestCaseQuery& query) override;

  Result<std::vector<std::int64_t>> add_gpu_samples(
      std::span<const GpuSampleRecord> samples) override;
  Result<std::vector<GpuSampleRecord>> list_gpu_samples(std::int64_t job_id) override;
  Status delete_gpu_samples(std::span<const std::int64_t> ids) override;

  Result<std::vector<std::int64_t>> mark_interrupted(TimeMs now) override;

  Result<bool> acquire_gpu_leases(std::span<const GpuLease> leases) override;
  Status release_gpu_leases(std::string_view job_token) override;
  Status set_gpu_lease_holder(std::string_view job_token, std::string_view holder) override;
  Result<std::vector<GpuLease>> reclaim_gpu_leases() override;
  Result<std::vector<GpuLease>> list_gpu_leases() override;
  Status quarantine_gpu(const GpuQuarantine& record) override;
  Result<bool> release_gpu_quarantine(std::string_view gpu_uuid) override;
  Result<std::vector<GpuQuarantine>> list_gpu_quarantine() override;

  Result<std::optional<std::int64_t>> create_trigger(const Trigger& trigger) override;
  Status update_trigger(const Trigger& trigger) override;
  Result<Trigger> get_trigger(std::int64_t trigger_id) override;
  Result<std::vector<Trigger>> list_triggers(std::optional<TriggerStatus> status,
                                             int limit) override;
  Result<std::optional<std::string>> get_poll_head(std::string_view repository,
                                                   std::string_view ref) override;
  Status set_poll_head(std::string_view repository, std::string_view ref,
                       std::string_view sha) override;
  Result<std::map<TriggerStatus, std::int64_t>> count_triggers() override;

 private:
  // The prepared statement for `sql`, prepared on first use. `sql` must be a string with
  // static storage (the constants in this file): it is the cache key.
  Result<sqlite::Statement*> cached(std::string_view sql) REQUIRES(mutex_);
  Result<Run> get_run_locked(std::int64_t run_id) REQUIRES(mutex_);
  Result<std::vector<Job>> list_jobs_locked(std::int64_t run_id) REQUIRES(mutex_);
  Status require_row_locked(std::string_view sql, std::int64_t id, std::string_view what)
      REQUIRES(mutex_);
  Result<std::int64_t> append_log_locked(const LogLine& line) REQUIRES(mutex_);
  // The status update shared by runs and jobs: `sql` sets the status (?2) and stamps started_at
  // (when ?4) or finished_at (when ?5) once with ?3, for the row ?1.
  Result<std::vector<GpuLease>> reclaim_gpu_leases_locked() REQUIRES(mutex_);
  Status set_status(std::string_view sql, std::int64_t id, std::string_view status, bool starts,
                    bool ends, TimeMs at, std::string_view what) EXCLUDES(mutex_);

  Mutex mutex_;  // one connection serves every thread
  sqlite::Database db_ GUARDED_BY(mutex_);
  std::unordered_map<std::string_view, sqlite::Statement> cache_ GUARDED_BY(mutex_);
  std::string host_;  // runs of other hosts are never judged by mark_interrupted
};

inline constexpr std::string_view k_run_exists = "SELECT 1 FROM runs WHERE id = ?1";
inline constexpr std::string_view k_job_exists = "SELECT 1 FROM jobs WHERE id = ?1";

}  // namespace kiln::store
