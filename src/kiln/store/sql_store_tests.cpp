// SqlStore, continued: test cases from JUnit XML and quarantined tests (see sql_store_impl.h).

#include <cmath>

#include "kiln/store/sql_rows.h"
#include "kiln/store/sql_store_impl.h"

#define KILN_SQL_TEST_CASE_COLUMNS                                                        \
  "id, run_id, job_id, repository, commit_sha, suite, classname, name, status, seconds, " \
  "message, details, output, file, flaky, time"

namespace kiln::store {
namespace {

TestCase read_test_case(const sql::Statement& row) {
  TestCase c;
  c.id = row.int64(0);
  c.run_id = row.int64(1);
  c.job_id = row.int64(2);
  c.repository = row.text(3);
  c.commit_sha = row.text(4);
  c.suite = row.text(5);
  c.classname = row.text(6);
  c.name = row.text(7);
  c.status = row.text(8);
  c.seconds = row.real(9);
  c.message = row.text(10);
  c.details = row.text(11);
  c.output = row.text(12);
  c.file = row.text(13);
  c.flaky = row.int64(14) != 0;
  c.time = row.time(15);
  return c;
}

Status check(const TestCase& c) {
  if (c.name.empty()) return fail(ErrorCode::invalid_input, "a test case needs a name");
  if (c.status != "passed" && c.status != "failed" && c.status != "error" && c.status != "skipped")
    return fail(ErrorCode::invalid_input,
                "test '{}': status must be passed, failed, error or skipped, not '{}'", c.name,
                c.status);
  if (!std::isfinite(c.seconds) || c.seconds < 0)
    return fail(ErrorCode::invalid_input, "test '{}': time is not a finite, non-negative number",
                c.name);
  return {};
}

}  // namespace

Result<std::vector<std::int64_t>> SqlStore::add_test_cases(std::span<const TestCase> cases) {
  static constexpr std::string_view k_sql =
      "INSERT INTO test_cases (run_id, job_id, repository, commit_sha, suite, classname, name, "
      "status, seconds, message, details, output, file, flaky, time) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
  for (const auto& c : cases) KILN_TRY_VOID(check(c));
  std::lock_guard lock(mutex_);
  std::vector<std::int64_t> ids;
  if (cases.empty()) return ids;
  KILN_TRY(auto transaction, sql::Transaction::begin(*db_));
  const TimeMs now = now_ms();
  for (const auto& c : cases) {
    KILN_TRY(auto* statement, cached(k_sql));
    sql::StatementUse use(*statement);
    use->bind(1, c.run_id)
        .bind(2, c.job_id)
        .bind(3, c.repository)
        .bind(4, c.commit_sha)
        .bind(5, c.suite)
        .bind(6, c.classname)
        .bind(7, c.name)
        .bind(8, c.status)
        .bind(9, c.seconds)
        .bind(10, c.message)
        .bind(11, c.details)
        .bind(12, c.output)
        .bind(13, c.file)
        .bind(14, c.flaky ? 1 : 0)
        .bind(15, c.time != 0 ? c.time : now);
    if (auto done = use->run(); !done) {
      if (use->violation() == sql::Violation::foreign_key)
        return fail(ErrorCode::not_found, "no run with id {} (or no job with id {})", c.run_id,
                    c.job_id);
      return std::unexpected(done.error());
    }
    KILN_TRY(std::int64_t id, db_->last_insert_id());
    ids.push_back(id);
  }
  KILN_TRY_VOID(transaction.commit());
  return ids;
}

Result<std::vector<TestCase>> SqlStore::list_test_cases(const TestCaseQuery& query) {
  // The newest `limit` rows, turned back to oldest first.
  static constexpr std::string_view k_sql =
      "SELECT * FROM (SELECT " KILN_SQL_TEST_CASE_COLUMNS
      " FROM test_cases WHERE (?1 IS NULL OR run_id = ?1) AND (?2 IS NULL OR job_id = ?2) "
      "AND (?3 IS NULL OR run_id != ?3) AND (?4 = '' OR repository = ?4) "
      "AND (?5 = '' OR commit_sha = ?5) AND (?6 = '' OR classname = ?6) "
      "AND (?7 = '' OR name = ?7) AND (?8 = 0 OR status IN ('failed', 'error')) "
      "ORDER BY time DESC, id DESC LIMIT ?9) AS newest ORDER BY time, id";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  sql::StatementUse use(*statement);
  use->bind(1, query.run_id)
      .bind(2, query.job_id)
      .bind(3, query.exclude_run_id)
      .bind(4, query.repository)
      .bind(5, query.commit)
      .bind(6, query.classname)
      .bind(7, query.name)
      .bind(8, query.failed_only ? 1 : 0)
      .bind(9, rows::sql_limit(query.limit));
  return rows::read_all<TestCase>(
      *use, [](const sql::Statement& row) -> Result<TestCase> { return read_test_case(row); });
}

Status SqlStore::quarantine_test(const TestQuarantine& record) {
  static constexpr std::string_view k_sql =
      "INSERT INTO test_quarantine (repository, test, reason, manual, since, expires_at, "
      "released_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL) ON CONFLICT (repository, test) DO UPDATE "
      "SET reason = excluded.reason, manual = excluded.manual, since = excluded.since, "
      "expires_at = excluded.expires_at, released_at = NULL";
  if (record.test.empty()) return fail(ErrorCode::invalid_input, "a quarantined test needs a name");
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  sql::StatementUse use(*statement);
  use->bind(1, record.repository)
      .bind(2, record.test)
      .bind(3, record.reason)
      .bind(4, record.manual ? 1 : 0)
      .bind(5, record.since != 0 ? record.since : now_ms())
      .bind(6, record.expires_at);
  return use->run();
}

Result<bool> SqlStore::release_test_quarantine(std::string_view repository, std::string_view test,
                                               TimeMs at) {
  static constexpr std::string_view k_sql =
      "UPDATE test_quarantine SET released_at = ?3 WHERE repository = ?1 AND test = ?2 "
      "AND released_at IS NULL AND expires_at > ?3";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  sql::StatementUse use(*statement);
  use->bind(1, repository).bind(2, test).bind(3, at != 0 ? at : now_ms());
  KILN_TRY_VOID(use->run());
  return db_->changes() > 0;
}

Result<std::vector<TestQuarantine>> SqlStore::list_test_quarantine(std::string_view repository) {
  static constexpr std::string_view k_sql =
      "SELECT repository, test, reason, manual, since, expires_at, released_at "
      "FROM test_quarantine WHERE repository = ?1 ORDER BY test";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  sql::StatementUse use(*statement);
  use->bind(1, repository);
  return rows::read_all<TestQuarantine>(*use,
                                        [](const sql::Statement& row) -> Result<TestQuarantine> {
                                          TestQuarantine record;
                                          record.repository = row.text(0);
                                          record.test = row.text(1);
                                          record.reason = row.text(2);
                                          record.manual = row.int64(3) != 0;
                                          record.since = row.int64(4);
                                          record.expires_at = row.int64(5);
                                          record.released_at = row.time(6);
                                          return record;
                                        });
}

}  // namespace kiln::store
