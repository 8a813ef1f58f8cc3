// SqlStore, continued: benchmark results (see sql_store_impl.h).

#include <cmath>

#include "kiln/store/sql_rows.h"
#include "kiln/store/sql_store_impl.h"

#define KILN_SQL_BENCHMARK_COLUMNS                                                          \
  "id, repository, benchmark, metric, unit, direction, branch, testbed, commit_sha, time, " \
  "run_id, job_id, source, format, value, samples, extra"

namespace kiln::store {
namespace {

Result<BenchmarkResult> read_benchmark(const sql::Statement& row) {
  BenchmarkResult result;
  result.id = row.int64(0);
  result.repository = row.text(1);
  result.benchmark = row.text(2);
  result.metric = row.text(3);
  result.unit = row.text(4);
  result.direction = row.text(5);
  result.branch = row.text(6);
  result.testbed = row.text(7);
  result.commit_sha = row.text(8);
  result.time = row.time(9);
  result.run_id = row.optional_int64(10);
  result.job_id = row.optional_int64(11);
  result.source = row.text(12);
  result.format = row.text(13);
  result.value = row.real(14);
  KILN_TRY(auto samples, rows::read_json(row, 15));
  if (!samples.is_array())
    return fail(ErrorCode::io_error, "benchmark result {}: samples is not an array", result.id);
  for (const auto& sample : samples) {
    if (!sample.is_number())
      return fail(ErrorCode::io_error, "benchmark result {}: a sample is not a number", result.id);
    result.samples.push_back(sample.get<double>());
  }
  KILN_TRY(result.extra, rows::read_json(row, 16));
  return result;
}

Status check(const BenchmarkResult& result) {
  if (result.repository.empty() || result.benchmark.empty() || result.metric.empty())
    return fail(ErrorCode::invalid_input,
                "a benchmark result needs a repository, a benchmark and a metric");
  if (result.direction != "smaller_is_better" && result.direction != "bigger_is_better")
    return fail(ErrorCode::invalid_input,
                "benchmark '{}': direction must be smaller_is_better or "
                "bigger_is_better, not '{}'",
                result.benchmark, result.direction);
  if (!std::isfinite(result.value))
    return fail(ErrorCode::invalid_input, "benchmark '{}': value is not a finite number",
                result.benchmark);
  for (double sample : result.samples)
    if (!std::isfinite(sample))
      return fail(ErrorCode::invalid_input, "benchmark '{}': a sample is not a finite number",
                  result.benchmark);
  return {};
}

}  // namespace

Result<std::vector<std::int64_t>> SqlStore::add_benchmark_results(
    std::span<const BenchmarkResult> results) {
  static constexpr std::string_view k_sql =
      "INSERT INTO benchmark_results (repository, benchmark, metric, unit, direction, branch, "
      "testbed, commit_sha, time, run_id, job_id, source, format, value, samples, extra) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";
  for (const auto& result : results) KILN_TRY_VOID(check(result));
  std::lock_guard lock(mutex_);
  std::vector<std::int64_t> ids;
  if (results.empty()) return ids;
  KILN_TRY(auto transaction, sql::Transaction::begin(*db_));
  const TimeMs now = now_ms();
  for (const auto& result : results) {
    KILN_TRY(auto* statement, cached(k_sql));
    sql::StatementUse use(*statement);
    nlohmann::json samples = result.samples;
    use->bind(1, result.repository)
        .bind(2, result.benchmark)
        .bind(3, result.metric)
        .bind(4, result.unit)
        .bind(5, result.direction)
        .bind(6, result.branch)
        .bind(7, result.testbed)
        .bind(8, result.commit_sha)
        .bind(9, result.time != 0 ? result.time : now)
        .bind(10, result.run_id)
        .bind(11, result.job_id)
        .bind(12, result.source)
        .bind(13, result.format)
        .bind(14, result.value)
        .bind(15, rows::json_text(samples))
        .bind(16, rows::json_text(result.extra));
    if (auto done = use->run(); !done) {
      if (use->violation() == sql::Violation::foreign_key)
        return fail(ErrorCode::not_found, "no run with id {} (or no job with id {})",
                    result.run_id.value_or(0), result.job_id.value_or(0));
      return std::unexpected(done.error());
    }
    KILN_TRY(std::int64_t id, db_->last_insert_id());
    ids.push_back(id);
  }
  KILN_TRY_VOID(transaction.commit());
  return ids;
}

Result<std::vector<BenchmarkResult>> SqlStore::list_benchmark_results(const BenchmarkQuery& query) {
  // The newest `limit` rows, turned back to oldest first.
  static constexpr std::string_view k_sql =
      "SELECT * FROM (SELECT " KILN_SQL_BENCHMARK_COLUMNS
      " FROM benchmark_results WHERE (?1 = '' OR repository = ?1) AND (?2 = '' OR benchmark = ?2) "
      "AND (?3 = '' OR metric = ?3) AND (?4 = '' OR branch = ?4) AND (?5 = '' OR testbed = ?5) "
      "AND (?6 IS NULL OR run_id = ?6) AND (?7 IS NULL OR run_id IS NULL OR run_id != ?7) "
      "AND (?9 = '' OR substr(commit_sha, 1, length(?9)) = ?9) "
      "ORDER BY time DESC, id DESC LIMIT ?8) AS newest ORDER BY time, id";
  if (query.commit.find_first_not_of("0123456789abcdef") != std::string::npos)
    return fail(ErrorCode::invalid_input, "commit '{}': expected lowercase hex digits",
                query.commit);
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  sql::StatementUse use(*statement);
  use->bind(1, query.repository)
      .bind(2, query.benchmark)
      .bind(3, query.metric)
      .bind(4, query.branch)
      .bind(5, query.testbed)
      .bind(6, query.run_id)
      .bind(7, query.exclude_run_id)
      .bind(8, rows::sql_limit(query.limit))
      .bind(9, query.commit);
  return rows::read_all<BenchmarkResult>(*use, read_benchmark);
}

}  // namespace kiln::store
