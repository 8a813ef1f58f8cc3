#pragma once
// Internal to the store: SqlStore, the one Store over both databases (sql.h: SQLite, PostgreSQL),
// whose members are defined in sql_store.cpp (runs, jobs, steps, opening), sql_store_logs.cpp
// (logs, artifacts, crash recovery), sql_store_benchmarks.cpp (benchmark results),
// sql_store_tests.cpp (test results, quarantined tests), sql_store_gpu_samples.cpp (GPU samples),
// sql_store_gpus.cpp (GPU leases, quarantine) and sql_store_triggers.cpp (kiln serve's events).

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kiln/store/sql.h"
#include "kiln/store/store.h"

namespace kiln::store {

class SqlStore final : public Store {
 public:
  // `journal_dir`: where open_log_writer() keeps its journals (log_journal.h).
  SqlStore(std::unique_ptr<sql::Database> db, std::filesystem::path journal_dir);

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
  Result<std::vector<QueueSample>> list_queue_times() override;

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

  Status quarantine_test(const TestQuarantine& record) override;
  Result<bool> release_test_quarantine(std::string_view repository, std::string_view test,
                                       TimeMs at) override;
  Result<std::vector<TestQuarantine>> list_test_quarantine(std::string_view repository) override;

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
  Result<std::vector<GpuLease>> list_fleet_gpu_leases() override;
  Result<std::vector<GpuQuarantine>> list_fleet_gpu_quarantine() override;

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
  Result<bool> claim_trigger(std::int64_t trigger_id) override;
  Status beat(TimeMs now) override;
  Result<std::vector<std::int64_t>> list_orphaned_triggers(TimeMs stale_before) override;

 private:
  // The prepared statement for `sql`, prepared on first use. `sql` must be a string with
  // static storage (the constants in this file): it is the cache key. Requires mutex_.
  Result<sql::Statement*> cached(std::string_view sql);
  // Every *_locked function requires mutex_.
  Result<Run> get_run_locked(std::int64_t run_id);
  Result<std::vector<Job>> list_jobs_locked(std::int64_t run_id);
  Status require_row_locked(std::string_view sql, std::int64_t id, std::string_view what);
  // The run of the job a line belongs to, as append_logs remembers it across a batch (nearly
  // always one job's lines): job_id 0 for none yet.
  struct RunOfJob {
    std::int64_t job_id = 0;
    std::int64_t run_id = 0;
  };
  // Inserts `line`; its run id comes from the job's row, or from `known` when it names the
  // line's job (updated otherwise).
  Result<std::int64_t> append_log_locked(const LogLine& line, RunOfJob* known = nullptr);
  // The status update shared by runs and jobs: `sql` sets the status (?2) and stamps started_at
  // (when ?4) or finished_at (when ?5) once with ?3, for the row ?1.
  Result<std::vector<GpuLease>> reclaim_gpu_leases_locked();
  Status set_status(std::string_view sql, std::int64_t id, std::string_view status, bool starts,
                    bool ends, TimeMs at, std::string_view what);

  std::mutex mutex_;  // guards db_ and cache_: one connection serves every thread
  std::unique_ptr<sql::Database> db_;
  std::unordered_map<std::string_view, std::unique_ptr<sql::Statement>> cache_;
  std::filesystem::path journal_dir_;
  std::string host_;  // runs of other hosts are never judged by mark_interrupted
  ProcessIdentity self_;
  std::string replica_;  // HOST:PID:START_TIME of this process
};

inline constexpr std::string_view k_run_exists = "SELECT 1 FROM runs WHERE id = ?1";
inline constexpr std::string_view k_job_exists = "SELECT 1 FROM jobs WHERE id = ?1";

// Migrates `db` (migrations.h), opens the store over it, marks the runs of dead owners
// interrupted (when asked) and imports the journals dead kilns left in `journal_dir`.
Result<std::unique_ptr<Store>> open_sql_store(std::unique_ptr<sql::Database> db,
                                              std::filesystem::path journal_dir,
                                              bool mark_interrupted_on_open);

}  // namespace kiln::store
