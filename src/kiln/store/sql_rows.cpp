#include "kiln/store/sql_rows.h"

namespace kiln::store::rows {

using sql::Statement;

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<nlohmann::json> read_json(const Statement& row, int column) {
  std::string text = row.text(column);
  if (text.empty()) return nlohmann::json();
  auto value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return fail(ErrorCode::io_error, "corrupt JSON in column {} of '{}'", column, row.sql());
  }
  return value;
}

std::optional<int> read_optional_int(const Statement& row, int column) {
  auto value = row.optional_int64(column);
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

Result<std::optional<Conclusion>> read_conclusion(const Statement& row, int column) {
  if (row.is_null(column)) return std::optional<Conclusion>{};
  KILN_TRY(Conclusion conclusion, parse_conclusion(row.text(column)));
  return std::optional<Conclusion>{conclusion};
}

void bind_conclusion(Statement& statement, int index, std::optional<Conclusion> conclusion) {
  if (conclusion) {
    statement.bind(index, to_string(*conclusion));
  } else {
    statement.bind_null(index, sql::Type::text);
  }
}

Result<Run> read_run(const Statement& row) {
  Run run;
  run.id = row.int64(0);
  run.number = row.int64(1);
  run.repository = row.text(2);
  run.workflow_path = row.text(3);
  run.workflow_name = row.text(4);
  run.event = row.text(5);
  run.ref = row.text(6);
  run.sha = row.text(7);
  KILN_TRY(run.status, parse_run_status(row.text(8)));
  run.created_at = row.time(9);
  run.started_at = row.time(10);
  run.finished_at = row.time(11);
  run.owner.pid = static_cast<int>(row.int64(12));
  run.owner.start_time = row.int64(13);
  run.owner.host = row.text(14);
  KILN_TRY(run.extra, read_json(row, 15));
  run.attempt = static_cast<int>(row.int64(16));
  run.rerun_of = row.is_null(17) ? 0 : row.int64(17);
  return run;
}

nlohmann::json queue_reasons_json(const JobQueueTime& queue) {
  nlohmann::json reasons = nlohmann::json::object();
  for (const auto& [reason, ms] : queue.reasons_ms) reasons[reason] = ms;
  return reasons;
}

Result<Job> read_job(const Statement& row) {
  Job job;
  job.id = row.int64(0);
  job.run_id = row.int64(1);
  job.key = row.text(2);
  job.workflow_job_id = row.text(3);
  job.name = row.text(4);
  KILN_TRY(job.status, parse_job_status(row.text(5)));
  KILN_TRY(job.conclusion, read_conclusion(row, 6));
  KILN_TRY(job.matrix, read_json(row, 7));
  KILN_TRY(job.labels, read_json(row, 8));
  KILN_TRY(job.outputs, read_json(row, 9));
  job.started_at = row.time(10);
  job.finished_at = row.time(11);
  job.exit_code = read_optional_int(row, 12);
  job.message = row.text(13);
  KILN_TRY(job.extra, read_json(row, 14));
  // '' is a job that did not fail, or one recorded before failure classes (schema v11).
  if (auto text = row.text(15); !text.empty()) {
    KILN_TRY(job.failure_class, parse_failure_class(text));
  }
  job.failure_evidence = row.text(16);
  job.queue.queued_at = row.is_null(17) ? 0 : row.time(17);
  if (!row.is_null(18)) job.queue.waited_ms = row.int64(18);
  KILN_TRY(auto reasons, read_json(row, 19));
  if (reasons.is_object())
    for (const auto& [reason, ms] : reasons.items())
      if (ms.is_number_integer()) job.queue.reasons_ms[reason] = ms.get<std::int64_t>();
  job.queue.priority = row.text(20);
  job.queue.gpu_model = row.text(21);
  return job;
}

Result<Step> read_step(const Statement& row) {
  Step step;
  step.id = row.int64(0);
  step.job_id = row.int64(1);
  step.index = static_cast<int>(row.int64(2));
  step.name = row.text(3);
  KILN_TRY(step.status, parse_job_status(row.text(4)));
  KILN_TRY(step.outcome, read_conclusion(row, 5));
  KILN_TRY(step.conclusion, read_conclusion(row, 6));
  step.exit_code = read_optional_int(row, 7);
  step.started_at = row.time(8);
  step.finished_at = row.time(9);
  KILN_TRY(step.outputs, read_json(row, 10));
  return step;
}

Result<Artifact> read_artifact(const Statement& row) {
  Artifact artifact;
  artifact.id = row.int64(0);
  artifact.run_id = row.int64(1);
  artifact.job_id = row.optional_int64(2);
  artifact.name = row.text(3);
  artifact.path = row.text(4);
  artifact.size_bytes = row.int64(5);
  artifact.file_count = row.int64(6);
  artifact.created_at = row.time(7);
  artifact.retention_days = static_cast<int>(row.int64(8));
  artifact.expires_at = row.time(9);
  return artifact;
}

Result<LogChunk> read_log_chunk(const Statement& row) {
  LogChunk chunk;
  chunk.seq = row.int64(0);
  chunk.job_id = row.int64(1);
  chunk.step_index = read_optional_int(row, 2);
  KILN_TRY(chunk.stream, parse_log_stream(row.text(3)));
  chunk.text = row.text(4);
  chunk.time = row.time(5);
  return chunk;
}

}  // namespace kiln::store::rows
