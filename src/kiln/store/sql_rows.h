#pragma once
// Internal to the store (sql_store_impl.h): the column lists of each table and the mapping between
// rows and the records of records.h, shared by the files of SqlStore.

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"
#include "kiln/store/records.h"
#include "kiln/store/sql.h"

// Column lists, in the order the read_* functions expect them.
#define KILN_SQL_RUN_COLUMNS                                                              \
  "id, number, repository, workflow_path, workflow_name, event, ref, sha, status, "       \
  "created_at, started_at, finished_at, owner_pid, owner_start_time, owner_host, extra, " \
  "attempt, rerun_of"
#define KILN_SQL_JOB_COLUMNS                                                              \
  "id, run_id, key, workflow_job_id, name, status, conclusion, matrix, labels, outputs, " \
  "started_at, finished_at, exit_code, message, extra, failure_class, failure_evidence, " \
  "queued_at, queue_ms, queue_reasons, priority, gpu_model"
#define KILN_SQL_STEP_COLUMNS                                                          \
  "id, job_id, step_index, name, status, outcome, conclusion, exit_code, started_at, " \
  "finished_at, outputs"
#define KILN_SQL_ARTIFACT_COLUMNS                                                        \
  "id, run_id, job_id, name, path, size_bytes, file_count, created_at, retention_days, " \
  "expires_at"
#define KILN_SQL_LOG_COLUMNS "seq, job_id, step_index, stream, text, time"

namespace kiln::store::rows {

// Never throws: invalid UTF-8 in a value (a matrix entry, an output) is replaced, not fatal.
std::string json_text(const nlohmann::json& value);
// An empty column reads as null; text that is not JSON is an io_error (a damaged database).
Result<nlohmann::json> read_json(const sql::Statement& row, int column);
std::optional<int> read_optional_int(const sql::Statement& row, int column);
Result<std::optional<Conclusion>> read_conclusion(const sql::Statement& row, int column);
void bind_conclusion(sql::Statement& statement, int index, std::optional<Conclusion> conclusion);

// One record from the current row of a statement that selected KILN_SQL_<RECORD>_COLUMNS.
Result<Run> read_run(const sql::Statement& row);
Result<Job> read_job(const sql::Statement& row);
// JobQueueTime::reasons_ms as the queue_reasons column holds it: an object of milliseconds.
nlohmann::json queue_reasons_json(const JobQueueTime& queue);
Result<Step> read_step(const sql::Statement& row);
Result<Artifact> read_artifact(const sql::Statement& row);
Result<LogChunk> read_log_chunk(const sql::Statement& row);

// Reads every row of a statement with `read` (one of the read_* above).
template <class T, class Reader>
Result<std::vector<T>> read_all(sql::Statement& statement, Reader read) {
  std::vector<T> records;
  while (true) {
    KILN_TRY(bool has_row, statement.step());
    if (!has_row) break;
    KILN_TRY(T row, read(statement));
    records.push_back(std::move(row));
  }
  return records;
}

// "No limit" (limit <= 0) as a LIMIT both databases take (PostgreSQL refuses a negative one).
inline std::int64_t sql_limit(int limit) {
  return limit > 0 ? limit : std::numeric_limits<std::int64_t>::max();
}

}  // namespace kiln::store::rows
