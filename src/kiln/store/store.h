#pragma once
// Store: everything Kiln remembers about runs goes through this interface, so that a second
// backend (PostgreSQL, for several servers) can be added without touching the engine. The
// records are in records.h; the SQLite implementation is in sqlite_store.h.
//
// Contract for every implementation:
// - Thread-safe: the engine calls one Store from several job threads at once.
// - Several processes may use one database at the same time (`kiln runs` while `kiln run`
//   writes); each sees what the others committed.
// - Every write is durable when the call returns (a kill -9 of the process loses nothing that
//   a call already accepted), log lines included: they are written as produced.
// - Secrets are never written: the store takes already-masked text and JSON.
// - Errors: not_found for an id or name that does not exist; invalid_input for a duplicate
//   unique key (job key in a run, step index in a job, artifact name in a run); io_error for
//   the database failing; unsupported for a database from a newer Kiln.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/store/records.h"

namespace kiln::store {

// One job's log lines as the job prints them. append() makes a line durable against a crash of
// kiln before it returns (write before show: the caller shows the line only after), at the cost
// of one write() to a journal file; the lines reach the store's tables in batches (by time and
// count), and the journal of a kiln that died is imported when its run is found interrupted.
// Lines of one job must all go through its one writer, in order. Thread-safe.
class LogWriter {
 public:
  virtual ~LogWriter() = default;
  virtual Status append(const LogLine& line) = 0;
  // append() of each line, in order, as durable; the journal takes them with one write().
  virtual Status append_all(std::span<const LogLine> lines) {
    for (const auto& line : lines) KILN_TRY_VOID(append(line));
    return {};
  }
  // Commits every line appended so far (also done by time, and by close()).
  virtual Status flush() = 0;
  // Flushes, then forgets the journal; a line appended after close() is committed at once.
  virtual Status close() = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Runs. create_run ignores run.id and run.number and returns the stored run (with both).
  // created_at 0 means now; an owner with pid 0 means the calling process.
  virtual Result<Run> create_run(const Run& run) = 0;
  // Writes every field of the run with id run.id except number and created_at.
  virtual Status update_run(const Run& run) = 0;
  // Sets the status; entering `running` sets started_at (once), a terminal state sets
  // finished_at. The convenience the engine uses for most transitions.
  virtual Status set_run_status(std::int64_t run_id, RunStatus status, TimeMs at) = 0;
  virtual Result<Run> get_run(std::int64_t run_id) = 0;
  virtual Result<std::vector<Run>> list_runs(const RunQuery& query) = 0;
  virtual Result<RunDetail> get_run_detail(std::int64_t run_id) = 0;

  // Jobs. create_job ignores job.id and returns the new row id.
  virtual Result<std::int64_t> create_job(const Job& job) = 0;
  // Writes every field of the job with id job.id except run_id and key.
  virtual Status update_job(const Job& job) = 0;
  // Like set_run_status, for a job.
  virtual Status set_job_status(std::int64_t job_id, JobStatus status, TimeMs at) = 0;
  virtual Result<Job> get_job(std::int64_t job_id) = 0;
  // The jobs of a run in creation order (not_found if the run does not exist).
  virtual Result<std::vector<Job>> list_jobs(std::int64_t run_id) = 0;
  // Every job that started, with the time it waited in the queue (kiln_job_queue_seconds).
  virtual Result<std::vector<QueueSample>> list_queue_times() = 0;

  // Steps. create_step ignores step.id and returns the new row id.
  virtual Result<std::int64_t> create_step(const Step& step) = 0;
  // Writes every field of the step with id step.id except job_id and index.
  virtual Status update_step(const Step& step) = 0;
  virtual Result<std::vector<Step>> list_steps(std::int64_t job_id) = 0;

  // Logs, appended as produced: each call is its own committed transaction. Returns the seq of
  // the (last) chunk written (0 for no lines). A time of 0 means now. A commit costs far more
  // than a line, so a chatty step's lines should be batched (append_logs) over a short
  // interval rather than committed one by one.
  virtual Result<std::int64_t> append_log(const LogLine& line) = 0;
  virtual Result<std::int64_t> append_logs(std::span<const LogLine> lines) = 0;
  // The way a running job's lines are written (LogWriter above): per line as cheap as a write()
  // to a file, durable as append_log.
  virtual Result<std::unique_ptr<LogWriter>> open_log_writer(std::int64_t job_id) = 0;
  // Chunks of a run (or one of its jobs) in seq order.
  virtual Result<std::vector<LogChunk>> read_logs(const LogQuery& query) = 0;

  // Artifacts. create_artifact ignores artifact.id; a name already used in the run is
  // invalid_input (delete the old one first to overwrite). created_at 0 means now; with
  // retention_days set and expires_at 0, expires_at is computed.
  virtual Result<std::int64_t> create_artifact(const Artifact& artifact) = 0;
  virtual Result<std::vector<Artifact>> list_artifacts(std::int64_t run_id) = 0;
  virtual Result<Artifact> find_artifact(std::int64_t run_id, std::string_view name) = 0;
  virtual Status delete_artifact(std::int64_t artifact_id) = 0;
  // Artifacts whose expires_at is set and <= now, oldest first, for retention clean-up.
  virtual Result<std::vector<Artifact>> list_expired_artifacts(TimeMs now) = 0;

  // Benchmark results (the perf gate's history). add_benchmark_results stores all or none
  // (one transaction) and returns the ids; time 0 means now. A run_id/job_id that does not
  // exist is not_found.
  virtual Result<std::vector<std::int64_t>> add_benchmark_results(
      std::span<const BenchmarkResult> results) = 0;
  // Results matching the query, oldest first (by time, then id).
  virtual Result<std::vector<BenchmarkResult>> list_benchmark_results(
      const BenchmarkQuery& query) = 0;

  // Test results (JUnit XML a job wrote). add_test_cases stores all or none and returns the
  // ids; a run_id/job_id that does not exist is not_found.
  virtual Result<std::vector<std::int64_t>> add_test_cases(std::span<const TestCase> cases) = 0;
  // Cases matching the query, oldest first (by time, then id).
  virtual Result<std::vector<TestCase>> list_test_cases(const TestCaseQuery& query) = 0;

  // Quarantined tests (records.h TestQuarantine, schema version 12), one record per repository
  // and test. quarantine_test replaces an earlier record of the test (released_at is cleared);
  // release_test_quarantine sets released_at (`at`, 0: now) and returns false when the test was
  // not in force (never quarantined, expired, released). list_test_quarantine: every record of
  // the repository, in force or ended, by test.
  virtual Status quarantine_test(const TestQuarantine& record) = 0;
  virtual Result<bool> release_test_quarantine(std::string_view repository, std::string_view test,
                                               TimeMs at) = 0;
  virtual Result<std::vector<TestQuarantine>> list_test_quarantine(std::string_view repository) = 0;

  // GPU samples of jobs (records.h GpuSampleRecord). add_gpu_samples stores all or none in one
  // transaction (one commit per batch: the engine batches a few seconds of samples) and returns
  // the ids; a job_id that does not exist is not_found. list_gpu_samples: one job's rows by GPU
  // index, then time. delete_gpu_samples removes rows by id (the writer's thinning).
  virtual Result<std::vector<std::int64_t>> add_gpu_samples(
      std::span<const GpuSampleRecord> samples) = 0;
  virtual Result<std::vector<GpuSampleRecord>> list_gpu_samples(std::int64_t job_id) = 0;
  virtual Status delete_gpu_samples(std::span<const std::int64_t> ids) = 0;

  // Every run of this host still queued or running whose owner process is gone (the pid is
  // dead or now belongs to a process with another start time) becomes `interrupted`, with its
  // queued/waiting/running jobs and steps, finished at `now`. Returns the ids of those runs.
  virtual Result<std::vector<std::int64_t>> mark_interrupted(TimeMs now) = 0;

  // GPU leases of this host. acquire_gpu_leases is all or nothing and atomic across processes:
  // it first reclaims leases whose owner process is gone, then grants every lease or none;
  // false when one of the GPUs is held by a live owner. An owner with pid 0 is this process.
  virtual Result<bool> acquire_gpu_leases(std::span<const GpuLease> leases) = 0;
  // Releases every lease of the job with this token (none is not an error).
  virtual Status release_gpu_leases(std::string_view job_token) = 0;
  // Changes what `kiln gpus` says holds the leases of the job with this token (a failed job
  // held for debugging).
  virtual Status set_gpu_lease_holder(std::string_view job_token, std::string_view holder) = 0;
  // Deletes the leases whose owner process is gone and returns them.
  virtual Result<std::vector<GpuLease>> reclaim_gpu_leases() = 0;
  // The leases of this host, by GPU UUID.
  virtual Result<std::vector<GpuLease>> list_gpu_leases() = 0;

  // Quarantine of this host's GPUs. quarantine_gpu replaces an earlier record of the GPU;
  // release_gpu_quarantine returns false when the GPU was not quarantined.
  virtual Status quarantine_gpu(const GpuQuarantine& record) = 0;
  virtual Result<bool> release_gpu_quarantine(std::string_view gpu_uuid) = 0;
  virtual Result<std::vector<GpuQuarantine>> list_gpu_quarantine() = 0;

  // Every host's leases and quarantine, by host and GPU UUID, for a host store a fleet shares
  // (host_store.h): lease.owner.host and record.host say whose GPU it is.
  virtual Result<std::vector<GpuLease>> list_fleet_gpu_leases() = 0;
  virtual Result<std::vector<GpuQuarantine>> list_fleet_gpu_quarantine() = 0;

  // Events of `kiln serve` (records.h Trigger). create_trigger returns the new id, or nothing
  // when a trigger with the same non-empty delivery id (a forge's redelivery) or the same
  // non-empty identity (a replay) exists already: de-duplication that holds across restarts.
  virtual Result<std::optional<std::int64_t>> create_trigger(const Trigger& trigger) = 0;
  // Writes status, message, run_ids and updated_at (0: now) of the trigger with id trigger.id.
  virtual Status update_trigger(const Trigger& trigger) = 0;
  virtual Result<Trigger> get_trigger(std::int64_t trigger_id) = 0;
  // Newest first; `status` filters when set; limit 0: all.
  virtual Result<std::vector<Trigger>> list_triggers(std::optional<TriggerStatus> status,
                                                     int limit) = 0;

  // Polled branches of `kiln serve` (schema version 6): the commit last seen on `ref` of the
  // configured repository, nothing when the branch was never seen. set_poll_head replaces it.
  virtual Result<std::optional<std::string>> get_poll_head(std::string_view repository,
                                                           std::string_view ref) = 0;
  virtual Status set_poll_head(std::string_view repository, std::string_view ref,
                               std::string_view sha) = 0;
  // How many triggers are in each status (statuses with none are absent): GET /metrics.
  virtual Result<std::map<TriggerStatus, std::int64_t>> count_triggers() = 0;

  // Several `kiln serve` replicas on one database (schema version 10, docs/scale-out.md); a
  // replica is a process (ProcessIdentity). claim_trigger turns a queued trigger running for
  // this process, atomically: true for the one replica that claimed it, false when it was not
  // queued (claimed by another, cancelled).
  virtual Result<bool> claim_trigger(std::int64_t trigger_id) = 0;
  // This process says it is alive (at `now`, 0: now).
  virtual Status beat(TimeMs now) = 0;
  // The running triggers whose claimer is gone: claimed by no replica (a server before
  // replicas), by one that never beat or last beat before `stale_before` (another host's that
  // died), or by a dead process of this host (at once). Another replica runs them again.
  virtual Result<std::vector<std::int64_t>> list_orphaned_triggers(TimeMs stale_before) = 0;
};

}  // namespace kiln::store
