#pragma once
// The RunRecorder seam: every store write of the scheduler goes through it. Writes are
// fire-and-report: a failed write does not stop the run, and the first one is said once (not
// dropped, not repeated for every row). A job row's extras are typed keys, each merged into the
// row's `extra` object, so that one writer's key never wipes another's (the re-run of failed
// jobs once lost the reused jobs' graph edges that way).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/engine/clock.h"
#include "kiln/store/records.h"

namespace kiln::store {
class Store;
}

namespace kiln::engine {

// The keys of a job row's `extra` object, each with one writer.
enum class JobExtra {
  graph,         // {"node", "needs"}: the dashboard's job graph (the scheduler)
  reused_from,   // {"run", "job"}: a re-run took the success of an earlier attempt over
  containers,    // ContainerJob::describe() (the job runner)
  gpu,           // the job's GPU summary (telemetry)
  gpus,          // the granted GPUs, for `kiln report`
  step_summary,  // the steps' $GITHUB_STEP_SUMMARY
  tests,         // the job's test totals
  log_dropped,   // {"lines", "bytes", "limit"}: what kiln.yml jobs.max_log_size kept out
  slurm,         // {"job_id", "node", "gpus"}: where Slurm ran it (`kiln agent`)
  annotations,   // [{level, message, title, file, line, ..., step}]: ::error/::warning/::notice
};
std::string_view to_string(JobExtra key);

struct JobResult {
  store::Conclusion conclusion = store::Conclusion::failure;
  std::string message = {};          // why it was skipped, cancelled or failed
  nlohmann::json outputs = nullptr;  // null: left as they are
  std::vector<std::pair<JobExtra, nlohmann::json>> extras = {};
  store::FailureClass failure_class = store::FailureClass::none;  // failure_class.h
  std::string failure_evidence = {};
  // A job that ended without starting: what it waited for (none: left as recorded).
  std::optional<store::JobQueueTime> queue = std::nullopt;
};

class RunRecorder {
 public:
  virtual ~RunRecorder() = default;
  // A run row, stamped created/started now and owned by this process. An error here stops the
  // run before anything starts (there is nothing to record jobs under).
  virtual Result<store::Run> create_run(store::Run run) = 0;
  virtual void finish_run(std::int64_t run_id, store::RunStatus status) = 0;
  // A queued job row; 0 when it could not be written (reported).
  virtual std::int64_t create_job(const store::Job& job) = 0;
  virtual void set_job_extra(std::int64_t job_id, JobExtra key, nlohmann::json value) = 0;
  // A job of a re-run recorded as the earlier attempt's success: its outputs, and reused_from.
  virtual void reuse_job(std::int64_t job_id, const store::Job& earlier) = 0;
  // A job the executor started is running.
  virtual void start_job(std::int64_t job_id) = 0;
  // How long a job waited in the queue and why: written when it leaves the queue (it starts,
  // or ends without starting).
  virtual void record_queue(std::int64_t job_id, const store::JobQueueTime& queue) = 0;
  // A job's end, written at once with its outputs and extras (a reader never sees a finished job
  // without them): one that ran, or one that ended without running (skipped, cancelled while
  // queued, failed while planned: no outputs, no extras).
  virtual void finish_job(std::int64_t job_id, const JobResult& result) = 0;
  // Links the artifacts `earlier` uploaded into run `run_id` as job `job_id`'s, under `root`
  // (hard links where the file system allows, else copies). Returns one warning per artifact
  // that could not be had.
  virtual std::vector<std::string> reuse_artifacts(const store::Job& earlier, std::int64_t run_id,
                                                   std::int64_t job_id,
                                                   const std::filesystem::path& root) = 0;
};

// The recorder over a Store (the run's MaskingStore). Thread-safe: the report-once flag is
// shared by every writer.
class StoreRunRecorder final : public RunRecorder {
 public:
  // `report` hears the first failed write, once.
  StoreRunRecorder(store::Store& store, const Clock& clock,
                   std::function<void(const std::string&)> report)
      : store_(store), clock_(clock), report_(std::move(report)) {}

  Result<store::Run> create_run(store::Run run) override;
  void finish_run(std::int64_t run_id, store::RunStatus status) override;
  std::int64_t create_job(const store::Job& job) override;
  void set_job_extra(std::int64_t job_id, JobExtra key, nlohmann::json value) override;
  void reuse_job(std::int64_t job_id, const store::Job& earlier) override;
  void start_job(std::int64_t job_id) override;
  void record_queue(std::int64_t job_id, const store::JobQueueTime& queue) override;
  void finish_job(std::int64_t job_id, const JobResult& result) override;
  std::vector<std::string> reuse_artifacts(const store::Job& earlier, std::int64_t run_id,
                                           std::int64_t job_id,
                                           const std::filesystem::path& root) override;

  // How many writes failed (the first was reported).
  int failed_writes() const { return failed_; }

 private:
  // A write's result: the first failure is reported, every one counted.
  void check(const Status& status, std::string_view what);
  // Reads the job row, changes it and writes it back, under one lock: writers of different
  // extras of one row do not lose each other's.
  void update_job(std::int64_t job_id, std::string_view what,
                  const std::function<void(store::Job&)>& change);

  store::Store& store_;
  const Clock& clock_;
  std::function<void(const std::string&)> report_;
  std::mutex rows_mutex_;  // serializes read-modify-write of job rows
  std::atomic<int> failed_{0};
};

// A job's conclusion as the store's job status.
store::JobStatus to_job_status(store::Conclusion conclusion);

}  // namespace kiln::engine
