// SqlStore, continued: logs, artifacts and crash recovery (see sql_store_impl.h).

#include <utility>

#include "kiln/store/log_journal.h"
#include "kiln/store/process_identity.h"
#include "kiln/store/sql_rows.h"
#include "kiln/store/sql_store_impl.h"

// The states mark_interrupted takes away from a dead owner.
#define KILN_SQL_ACTIVE_RUN "('queued', 'running')"
#define KILN_SQL_ACTIVE_JOB "('queued', 'waiting', 'running')"

namespace kiln::store {
namespace {

constexpr std::int64_t k_ms_per_day = 24LL * 60 * 60 * 1000;

}  // namespace

using rows::read_all;
using rows::read_artifact;
using rows::read_log_chunk;
using rows::sql_limit;
using sql::Statement;
using sql::StatementUse;
using sql::Transaction;

// --- logs -------------------------------------------------------------------------------

Result<std::int64_t> SqlStore::append_log_locked(const LogLine& line, RunOfJob* known) {
  // The run id comes from the job row; no row means no such job. Looked up on its own, not as
  // INSERT ... SELECT: SQLite gives a statement that may insert many rows a statement journal
  // (a savepoint, pages zeroed and copied), which made a line's insert cost about 60,000
  // instructions (docs/performance.md "kiln run: log throughput").
  static constexpr std::string_view k_run_sql = "SELECT run_id FROM jobs WHERE id = ?1";
  static constexpr std::string_view k_sql =
      "INSERT INTO log_chunks (run_id, job_id, step_index, stream, text, time) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
  std::int64_t run_id = 0;
  if (known != nullptr && known->job_id == line.job_id) {
    // A job's run never changes, and within append_logs' transaction the job cannot go away.
    run_id = known->run_id;
  } else {
    KILN_TRY(auto* statement, cached(k_run_sql));
    StatementUse use(*statement);
    use->bind(1, line.job_id);
    KILN_TRY(bool has_row, use->step());
    if (!has_row) return fail(ErrorCode::not_found, "no job with id {}", line.job_id);
    run_id = use->int64(0);
    if (known != nullptr) *known = {line.job_id, run_id};
  }
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, run_id)
      .bind(2, line.job_id)
      .bind(3, line.step_index)
      .bind(4, to_string(line.stream))
      .bind(5, line.text)
      .bind(6, line.time != 0 ? line.time : now_ms());
  KILN_TRY_VOID(use->run());
  return db_->last_insert_id();
}

Result<std::int64_t> SqlStore::append_log(const LogLine& line) {
  std::lock_guard lock(mutex_);
  return append_log_locked(line);
}

Result<std::int64_t> SqlStore::append_logs(std::span<const LogLine> lines) {
  std::lock_guard lock(mutex_);
  if (lines.empty()) return 0;
  KILN_TRY(auto transaction, Transaction::begin(*db_));
  std::int64_t last = 0;
  RunOfJob known;
  for (const auto& line : lines) {
    KILN_TRY(last, append_log_locked(line, &known));
  }
  KILN_TRY_VOID(transaction.commit());
  return last;
}

Result<std::unique_ptr<LogWriter>> SqlStore::open_log_writer(std::int64_t job_id) {
  return open_journaled_log_writer(*this, journal_dir_, job_id);
}

Result<std::vector<LogChunk>> SqlStore::read_logs(const LogQuery& query) {
  static constexpr std::string_view k_run_sql = "SELECT " KILN_SQL_LOG_COLUMNS
                                                " FROM log_chunks WHERE run_id = ?1 AND seq > ?2 "
                                                "ORDER BY seq LIMIT ?3";
  static constexpr std::string_view k_job_sql =
      "SELECT " KILN_SQL_LOG_COLUMNS
      " FROM log_chunks WHERE job_id = ?4 AND run_id = ?1 "
      "AND seq > ?2 ORDER BY seq LIMIT ?3";
  static constexpr std::string_view k_job_of_run_sql =
      "SELECT 1 FROM jobs WHERE id = ?1 AND run_id = ?2";
  std::lock_guard lock(mutex_);
  std::vector<LogChunk> chunks;
  {
    KILN_TRY(auto* statement, cached(query.job_id ? k_job_sql : k_run_sql));
    StatementUse use(*statement);
    use->bind(1, query.run_id).bind(2, query.after_seq).bind(3, sql_limit(query.limit));
    if (query.job_id) use->bind(4, *query.job_id);
    KILN_TRY(chunks, read_all<LogChunk>(*use, read_log_chunk));
  }
  if (chunks.empty()) {
    // Nothing (yet) or nothing at all: tell the caller which.
    KILN_TRY_VOID(require_row_locked(k_run_exists, query.run_id, "run"));
    if (query.job_id) {
      KILN_TRY(auto* statement, cached(k_job_of_run_sql));
      StatementUse use(*statement);
      use->bind(1, *query.job_id).bind(2, query.run_id);
      KILN_TRY(bool exists, use->step());
      if (!exists) {
        return fail(ErrorCode::not_found, "run {} has no job with id {}", query.run_id,
                    *query.job_id);
      }
    }
  }
  return chunks;
}

// --- artifacts --------------------------------------------------------------------------

Result<std::int64_t> SqlStore::create_artifact(const Artifact& artifact) {
  static constexpr std::string_view k_sql =
      "INSERT INTO artifacts (run_id, job_id, name, path, size_bytes, file_count, created_at, "
      "retention_days, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
  TimeMs created_at = artifact.created_at != 0 ? artifact.created_at : now_ms();
  TimeMs expires_at = artifact.expires_at;
  if (expires_at == 0 && artifact.retention_days > 0) {
    expires_at = created_at + artifact.retention_days * k_ms_per_day;
  }
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, artifact.run_id)
      .bind(2, artifact.job_id)
      .bind(3, artifact.name)
      .bind(4, artifact.path)
      .bind(5, artifact.size_bytes)
      .bind(6, artifact.file_count)
      .bind(7, created_at)
      .bind(8, artifact.retention_days)
      .bind_time(9, expires_at);
  if (auto done = use->run(); !done) {
    if (use->violation() == sql::Violation::foreign_key) {
      return fail(ErrorCode::not_found, "no run with id {} (or no job with id {})", artifact.run_id,
                  artifact.job_id.value_or(0));
    }
    if (use->violation() == sql::Violation::unique) {
      return fail(ErrorCode::invalid_input, "run {} already has an artifact named '{}'",
                  artifact.run_id, artifact.name);
    }
    return std::unexpected(done.error());
  }
  return db_->last_insert_id();
}

Result<std::vector<Artifact>> SqlStore::list_artifacts(std::int64_t run_id) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_ARTIFACT_COLUMNS " FROM artifacts WHERE run_id = ?1 ORDER BY name";
  std::lock_guard lock(mutex_);
  std::vector<Artifact> artifacts;
  {
    KILN_TRY(auto* statement, cached(k_sql));
    StatementUse use(*statement);
    use->bind(1, run_id);
    KILN_TRY(artifacts, read_all<Artifact>(*use, read_artifact));
  }
  if (artifacts.empty()) KILN_TRY_VOID(require_row_locked(k_run_exists, run_id, "run"));
  return artifacts;
}

Result<Artifact> SqlStore::find_artifact(std::int64_t run_id, std::string_view name) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_ARTIFACT_COLUMNS " FROM artifacts WHERE run_id = ?1 AND name = ?2";
  std::lock_guard lock(mutex_);
  {
    KILN_TRY(auto* statement, cached(k_sql));
    StatementUse use(*statement);
    use->bind(1, run_id).bind(2, name);
    KILN_TRY(bool has_row, use->step());
    if (has_row) return read_artifact(*use);
  }
  KILN_TRY_VOID(require_row_locked(k_run_exists, run_id, "run"));
  return fail(ErrorCode::not_found, "run {} has no artifact named '{}'", run_id, name);
}

Status SqlStore::delete_artifact(std::int64_t artifact_id) {
  static constexpr std::string_view k_sql = "DELETE FROM artifacts WHERE id = ?1";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, artifact_id);
  KILN_TRY_VOID(use->run());
  if (db_->changes() == 0) {
    return fail(ErrorCode::not_found, "no artifact with id {}", artifact_id);
  }
  return {};
}

Result<std::vector<Artifact>> SqlStore::list_expired_artifacts(TimeMs now) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_ARTIFACT_COLUMNS
      " FROM artifacts "
      "WHERE expires_at IS NOT NULL AND expires_at <= ?1 ORDER BY expires_at, id";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, now);
  return read_all<Artifact>(*use, read_artifact);
}

// --- crash recovery ---------------------------------------------------------------------

Result<std::vector<std::int64_t>> SqlStore::mark_interrupted(TimeMs now) {
  static constexpr std::string_view k_active_sql =
      "SELECT id, owner_pid, owner_start_time, owner_host FROM runs "
      "WHERE status IN " KILN_SQL_ACTIVE_RUN " ORDER BY id";
  // The status test again: the owner may have finished the run just before it died.
  static constexpr std::string_view k_run_sql =
      "UPDATE runs SET status = 'interrupted', finished_at = COALESCE(finished_at, ?2) "
      "WHERE id = ?1 AND status IN " KILN_SQL_ACTIVE_RUN;
  static constexpr std::string_view k_steps_sql =
      "UPDATE steps SET status = 'interrupted', finished_at = COALESCE(finished_at, ?2) "
      "WHERE status IN " KILN_SQL_ACTIVE_JOB
      " AND job_id IN (SELECT id FROM jobs WHERE run_id = ?1)";
  static constexpr std::string_view k_jobs_sql =
      "UPDATE jobs SET status = 'interrupted', finished_at = COALESCE(finished_at, ?2) "
      "WHERE run_id = ?1 AND status IN " KILN_SQL_ACTIVE_JOB;
  if (now == 0) now = now_ms();
  std::lock_guard lock(mutex_);
  std::vector<std::int64_t> orphans;
  {
    KILN_TRY(auto* statement, cached(k_active_sql));
    StatementUse use(*statement);
    while (true) {
      KILN_TRY(bool has_row, use->step());
      if (!has_row) break;
      ProcessIdentity owner{static_cast<int>(use->int64(1)), use->int64(2), use->text(3)};
      bool this_host = owner.host.empty() || owner.host == host_;
      if (this_host && !is_process_alive(owner)) orphans.push_back(use->int64(0));
    }
  }
  if (orphans.empty()) return orphans;

  std::vector<std::int64_t> marked;
  KILN_TRY(auto transaction, Transaction::begin(*db_));
  for (std::int64_t run_id : orphans) {
    {
      KILN_TRY(auto* statement, cached(k_run_sql));
      StatementUse use(*statement);
      use->bind(1, run_id).bind(2, now);
      KILN_TRY_VOID(use->run());
      if (db_->changes() == 0) continue;
    }
    for (auto sql : {k_steps_sql, k_jobs_sql}) {
      KILN_TRY(auto* statement, cached(sql));
      StatementUse use(*statement);
      use->bind(1, run_id).bind(2, now);
      KILN_TRY_VOID(use->run());
    }
    marked.push_back(run_id);
  }
  KILN_TRY_VOID(transaction.commit());
  return marked;
}

}  // namespace kiln::store
