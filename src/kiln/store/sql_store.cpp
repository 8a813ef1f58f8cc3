#include "kiln/store/sql_store_impl.h"

#include <cstdlib>

#include <system_error>
#include <utility>

#include "kiln/store/log_journal.h"
#include "kiln/store/migrations.h"
#include "kiln/store/process_identity.h"
#include "kiln/store/sql_rows.h"

namespace kiln::store {

using rows::bind_conclusion;
using rows::json_text;
using rows::read_all;
using rows::read_job;
using rows::read_run;
using rows::read_step;
using rows::sql_limit;
using sql::Statement;
using sql::StatementUse;
using sql::Transaction;

namespace {
// The column keeps '' for a job that did not fail (as rows written before schema v11 have).
// (A std::string: an empty std::string_view may bind as NULL.)
std::string failure_class_text(FailureClass failure_class) {
  return failure_class == FailureClass::none ? std::string()
                                             : std::string(to_string(failure_class));
}
}  // namespace

SqlStore::SqlStore(std::unique_ptr<sql::Database> db, std::filesystem::path journal_dir)
    : db_(std::move(db)),
      journal_dir_(std::move(journal_dir)),
      host_(host_name()),
      self_(current_process()),
      replica_(fmt::format("{}:{}:{}", self_.host, self_.pid, self_.start_time)) {}

Result<Statement*> SqlStore::cached(std::string_view sql) {
  auto found = cache_.find(sql);
  if (found != cache_.end()) return found->second.get();
  KILN_TRY(auto statement, db_->prepare(sql));
  return cache_.emplace(sql, std::move(statement)).first->second.get();
}

Status SqlStore::require_row_locked(std::string_view sql, std::int64_t id, std::string_view what) {
  KILN_TRY(auto* statement, cached(sql));
  StatementUse use(*statement);
  use->bind(1, id);
  KILN_TRY(bool exists, use->step());
  if (!exists) return fail(ErrorCode::not_found, "no {} with id {}", what, id);
  return {};
}

// --- runs -------------------------------------------------------------------------------

Result<Run> SqlStore::create_run(const Run& run) {
  static constexpr std::string_view k_sql =
      "INSERT INTO runs (number, repository, workflow_path, workflow_name, event, ref, sha, "
      "status, created_at, started_at, finished_at, owner_pid, owner_start_time, owner_host, "
      "extra, attempt, rerun_of) VALUES (CASE WHEN ?16 IS NOT NULL THEN ?17 ELSE "
      "(SELECT COALESCE(MAX(number), 0) + 1 FROM runs "
      "WHERE repository = ?1 AND workflow_path = ?2) END, "
      "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16) "
      "RETURNING id, number";
  Run stored = run;
  if (stored.created_at == 0) stored.created_at = now_ms();
  if (stored.owner.pid == 0) stored.owner = current_process();
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, stored.repository)
      .bind(2, stored.workflow_path)
      .bind(3, stored.workflow_name)
      .bind(4, stored.event)
      .bind(5, stored.ref)
      .bind(6, stored.sha)
      .bind(7, to_string(stored.status))
      .bind(8, stored.created_at)
      .bind_time(9, stored.started_at)
      .bind_time(10, stored.finished_at)
      .bind(11, stored.owner.pid)
      .bind(12, stored.owner.start_time)
      .bind(13, stored.owner.host)
      .bind(14, json_text(stored.extra))
      .bind(15, static_cast<std::int64_t>(stored.attempt > 0 ? stored.attempt : 1));
  if (stored.rerun_of > 0)
    use->bind(16, stored.rerun_of).bind(17, stored.number);
  else
    use->bind_null(16, sql::Type::integer).bind_null(17, sql::Type::integer);
  KILN_TRY(bool has_row, use->step());
  if (!has_row) return fail(ErrorCode::internal, "INSERT ... RETURNING gave no row");
  stored.id = use->int64(0);
  stored.number = use->int64(1);
  return stored;
}

Status SqlStore::update_run(const Run& run) {
  static constexpr std::string_view k_sql =
      "UPDATE runs SET repository = ?2, workflow_path = ?3, workflow_name = ?4, event = ?5, "
      "ref = ?6, sha = ?7, status = ?8, started_at = ?9, finished_at = ?10, owner_pid = ?11, "
      "owner_start_time = ?12, owner_host = ?13, extra = ?14 WHERE id = ?1";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, run.id)
      .bind(2, run.repository)
      .bind(3, run.workflow_path)
      .bind(4, run.workflow_name)
      .bind(5, run.event)
      .bind(6, run.ref)
      .bind(7, run.sha)
      .bind(8, to_string(run.status))
      .bind_time(9, run.started_at)
      .bind_time(10, run.finished_at)
      .bind(11, run.owner.pid)
      .bind(12, run.owner.start_time)
      .bind(13, run.owner.host)
      .bind(14, json_text(run.extra));
  KILN_TRY_VOID(use->run());
  if (db_->changes() == 0) return fail(ErrorCode::not_found, "no run with id {}", run.id);
  return {};
}

Status SqlStore::set_status(std::string_view sql, std::int64_t id, std::string_view status,
                            bool starts, bool ends, TimeMs at, std::string_view what) {
  if (at == 0) at = now_ms();
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(sql));
  StatementUse use(*statement);
  use->bind(1, id).bind(2, status).bind(3, at).bind(4, starts ? 1 : 0).bind(5, ends ? 1 : 0);
  KILN_TRY_VOID(use->run());
  if (db_->changes() == 0) return fail(ErrorCode::not_found, "no {} with id {}", what, id);
  return {};
}

Status SqlStore::set_run_status(std::int64_t run_id, RunStatus status, TimeMs at) {
  static constexpr std::string_view k_sql =
      "UPDATE runs SET status = ?2, "
      "started_at = CASE WHEN ?4 <> 0 THEN COALESCE(started_at, ?3) ELSE started_at END, "
      "finished_at = CASE WHEN ?5 <> 0 THEN COALESCE(finished_at, ?3) ELSE finished_at END "
      "WHERE id = ?1";
  return set_status(k_sql, run_id, to_string(status), status == RunStatus::running,
                    is_terminal(status), at, "run");
}

Result<Run> SqlStore::get_run_locked(std::int64_t run_id) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_RUN_COLUMNS " FROM runs WHERE id = ?1";
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, run_id);
  KILN_TRY(bool has_row, use->step());
  if (!has_row) return fail(ErrorCode::not_found, "no run with id {}", run_id);
  return read_run(*use);
}

Result<Run> SqlStore::get_run(std::int64_t run_id) {
  std::lock_guard lock(mutex_);
  return get_run_locked(run_id);
}

Result<std::vector<Run>> SqlStore::list_runs(const RunQuery& query) {
  static constexpr std::string_view k_sql = "SELECT " KILN_SQL_RUN_COLUMNS
                                            " FROM runs WHERE (?1 = '' OR repository = ?1) "
                                            "AND (?2 = 0 OR id < ?2) ORDER BY id DESC LIMIT ?3";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, query.repository).bind(2, query.before_id).bind(3, sql_limit(query.limit));
  return read_all<Run>(*use, read_run);
}

Result<RunDetail> SqlStore::get_run_detail(std::int64_t run_id) {
  static constexpr std::string_view k_steps_sql =
      "SELECT " KILN_SQL_STEP_COLUMNS
      " FROM steps WHERE job_id IN "
      "(SELECT id FROM jobs WHERE run_id = ?1) ORDER BY job_id, step_index";
  std::lock_guard lock(mutex_);
  // One snapshot, so a run written by another process meanwhile is seen whole or not at all.
  KILN_TRY(auto snapshot, Transaction::begin(*db_, Transaction::Mode::read));
  RunDetail detail;
  KILN_TRY(detail.run, get_run_locked(run_id));
  KILN_TRY(auto jobs, list_jobs_locked(run_id));
  std::unordered_map<std::int64_t, std::size_t> job_index;
  for (auto& job : jobs) {
    job_index.emplace(job.id, detail.jobs.size());
    detail.jobs.push_back(JobDetail{std::move(job), {}});
  }
  {
    KILN_TRY(auto* statement, cached(k_steps_sql));
    StatementUse use(*statement);
    use->bind(1, run_id);
    KILN_TRY(auto steps, read_all<Step>(*use, read_step));
    for (auto& step : steps) {
      auto found = job_index.find(step.job_id);
      if (found != job_index.end()) detail.jobs[found->second].steps.push_back(std::move(step));
    }
  }
  KILN_TRY_VOID(snapshot.commit());
  return detail;
}

// --- jobs -------------------------------------------------------------------------------

Result<std::int64_t> SqlStore::create_job(const Job& job) {
  static constexpr std::string_view k_sql =
      "INSERT INTO jobs (run_id, key, workflow_job_id, name, status, conclusion, matrix, labels, "
      "outputs, started_at, finished_at, exit_code, message, extra, failure_class, "
      "failure_evidence, queued_at, queue_ms, queue_reasons, priority, gpu_model) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
      "?19, ?20, ?21)";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, job.run_id)
      .bind(2, job.key)
      .bind(3, job.workflow_job_id)
      .bind(4, job.name)
      .bind(5, to_string(job.status));
  bind_conclusion(*use, 6, job.conclusion);
  use->bind(7, json_text(job.matrix))
      .bind(8, json_text(job.labels))
      .bind(9, json_text(job.outputs))
      .bind_time(10, job.started_at)
      .bind_time(11, job.finished_at)
      .bind(12, job.exit_code)
      .bind(13, job.message)
      .bind(14, json_text(job.extra))
      .bind(15, failure_class_text(job.failure_class))
      .bind(16, job.failure_evidence)
      .bind_time(17, job.queue.queued_at)
      .bind(18, job.queue.waited_ms)
      .bind(19, json_text(rows::queue_reasons_json(job.queue)))
      .bind(20, job.queue.priority)
      .bind(21, job.queue.gpu_model);
  if (auto done = use->run(); !done) {
    if (use->violation() == sql::Violation::foreign_key) {
      return fail(ErrorCode::not_found, "no run with id {}", job.run_id);
    }
    if (use->violation() == sql::Violation::unique) {
      return fail(ErrorCode::invalid_input, "run {} already has a job '{}'", job.run_id, job.key);
    }
    return std::unexpected(done.error());
  }
  return db_->last_insert_id();
}

Status SqlStore::update_job(const Job& job) {
  static constexpr std::string_view k_sql =
      "UPDATE jobs SET workflow_job_id = ?2, name = ?3, status = ?4, conclusion = ?5, "
      "matrix = ?6, labels = ?7, outputs = ?8, started_at = ?9, finished_at = ?10, "
      "exit_code = ?11, message = ?12, extra = ?13, failure_class = ?14, "
      "failure_evidence = ?15, queued_at = ?16, queue_ms = ?17, queue_reasons = ?18, "
      "priority = ?19, gpu_model = ?20 WHERE id = ?1";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, job.id)
      .bind(2, job.workflow_job_id)
      .bind(3, job.name)
      .bind(4, to_string(job.status));
  bind_conclusion(*use, 5, job.conclusion);
  use->bind(6, json_text(job.matrix))
      .bind(7, json_text(job.labels))
      .bind(8, json_text(job.outputs))
      .bind_time(9, job.started_at)
      .bind_time(10, job.finished_at)
      .bind(11, job.exit_code)
      .bind(12, job.message)
      .bind(13, json_text(job.extra))
      .bind(14, failure_class_text(job.failure_class))
      .bind(15, job.failure_evidence)
      .bind_time(16, job.queue.queued_at)
      .bind(17, job.queue.waited_ms)
      .bind(18, json_text(rows::queue_reasons_json(job.queue)))
      .bind(19, job.queue.priority)
      .bind(20, job.queue.gpu_model);
  KILN_TRY_VOID(use->run());
  if (db_->changes() == 0) return fail(ErrorCode::not_found, "no job with id {}", job.id);
  return {};
}

Status SqlStore::set_job_status(std::int64_t job_id, JobStatus status, TimeMs at) {
  static constexpr std::string_view k_sql =
      "UPDATE jobs SET status = ?2, "
      "started_at = CASE WHEN ?4 <> 0 THEN COALESCE(started_at, ?3) ELSE started_at END, "
      "finished_at = CASE WHEN ?5 <> 0 THEN COALESCE(finished_at, ?3) ELSE finished_at END "
      "WHERE id = ?1";
  return set_status(k_sql, job_id, to_string(status), status == JobStatus::running,
                    is_terminal(status), at, "job");
}

Result<Job> SqlStore::get_job(std::int64_t job_id) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_JOB_COLUMNS " FROM jobs WHERE id = ?1";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, job_id);
  KILN_TRY(bool has_row, use->step());
  if (!has_row) return fail(ErrorCode::not_found, "no job with id {}", job_id);
  return read_job(*use);
}

Result<std::vector<Job>> SqlStore::list_jobs_locked(std::int64_t run_id) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_JOB_COLUMNS " FROM jobs WHERE run_id = ?1 ORDER BY id";
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, run_id);
  return read_all<Job>(*use, read_job);
}

Result<std::vector<Job>> SqlStore::list_jobs(std::int64_t run_id) {
  std::lock_guard lock(mutex_);
  KILN_TRY(auto jobs, list_jobs_locked(run_id));
  if (jobs.empty()) KILN_TRY_VOID(require_row_locked(k_run_exists, run_id, "run"));
  return jobs;
}

Result<std::vector<QueueSample>> SqlStore::list_queue_times() {
  static constexpr std::string_view k_sql =
      "SELECT labels, gpu_model, queue_ms FROM jobs WHERE queue_ms IS NOT NULL";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  return read_all<QueueSample>(*use, [](const sql::Statement& row) -> Result<QueueSample> {
    QueueSample sample;
    KILN_TRY(auto labels, rows::read_json(row, 0));
    if (labels.is_array())
      for (const auto& label : labels)
        if (label.is_string()) sample.labels.push_back(label.get<std::string>());
    sample.gpu_model = row.text(1);
    sample.waited_ms = row.int64(2);
    return sample;
  });
}

// --- steps ------------------------------------------------------------------------------

Result<std::int64_t> SqlStore::create_step(const Step& step) {
  static constexpr std::string_view k_sql =
      "INSERT INTO steps (job_id, step_index, name, status, outcome, conclusion, exit_code, "
      "started_at, finished_at, outputs) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, step.job_id).bind(2, step.index).bind(3, step.name).bind(4, to_string(step.status));
  bind_conclusion(*use, 5, step.outcome);
  bind_conclusion(*use, 6, step.conclusion);
  use->bind(7, step.exit_code)
      .bind_time(8, step.started_at)
      .bind_time(9, step.finished_at)
      .bind(10, json_text(step.outputs));
  if (auto done = use->run(); !done) {
    if (use->violation() == sql::Violation::foreign_key) {
      return fail(ErrorCode::not_found, "no job with id {}", step.job_id);
    }
    if (use->violation() == sql::Violation::unique) {
      return fail(ErrorCode::invalid_input, "job {} already has a step at index {}", step.job_id,
                  step.index);
    }
    return std::unexpected(done.error());
  }
  return db_->last_insert_id();
}

Status SqlStore::update_step(const Step& step) {
  static constexpr std::string_view k_sql =
      "UPDATE steps SET name = ?2, status = ?3, outcome = ?4, conclusion = ?5, exit_code = ?6, "
      "started_at = ?7, finished_at = ?8, outputs = ?9 WHERE id = ?1";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, step.id).bind(2, step.name).bind(3, to_string(step.status));
  bind_conclusion(*use, 4, step.outcome);
  bind_conclusion(*use, 5, step.conclusion);
  use->bind(6, step.exit_code)
      .bind_time(7, step.started_at)
      .bind_time(8, step.finished_at)
      .bind(9, json_text(step.outputs));
  KILN_TRY_VOID(use->run());
  if (db_->changes() == 0) return fail(ErrorCode::not_found, "no step with id {}", step.id);
  return {};
}

Result<std::vector<Step>> SqlStore::list_steps(std::int64_t job_id) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_STEP_COLUMNS " FROM steps WHERE job_id = ?1 ORDER BY step_index";
  std::lock_guard lock(mutex_);
  std::vector<Step> steps;
  {
    KILN_TRY(auto* statement, cached(k_sql));
    StatementUse use(*statement);
    use->bind(1, job_id);
    KILN_TRY(steps, read_all<Step>(*use, read_step));
  }
  if (steps.empty()) KILN_TRY_VOID(require_row_locked(k_job_exists, job_id, "job"));
  return steps;
}

Result<std::unique_ptr<Store>> open_sql_store(std::unique_ptr<sql::Database> db,
                                              std::filesystem::path journal_dir,
                                              bool mark_interrupted_on_open) {
  KILN_TRY_VOID(migrate(*db, schema_migrations()));
  auto store = std::make_unique<SqlStore>(std::move(db), journal_dir);
  if (mark_interrupted_on_open) KILN_TRY_VOID(store->mark_interrupted(now_ms()));
  // The log lines a dead kiln had shown but not yet committed (log_journal.h).
  KILN_TRY_VOID(recover_journals(*store, journal_dir));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace kiln::store
