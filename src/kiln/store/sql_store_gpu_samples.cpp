// SqlStore, continued: GPU samples of jobs (see sql_store_impl.h, records.h
// GpuSampleRecord).

#include <cmath>

#include "kiln/store/sql_rows.h"
#include "kiln/store/sql_store_impl.h"

#define KILN_SQL_GPU_SAMPLE_COLUMNS                                                      \
  "id, job_id, gpu_index, gpu_uuid, time, util, mem_util, mem_used_mib, mem_total_mib, " \
  "temp_c, power_w, energy_mj, sm_clock_mhz, mem_clock_mhz, throttle, processes"

namespace kiln::store {
namespace {

// A reading that is not a finite number is stored as unknown (NULL), as a missing one is.
void bind_real(sql::Statement& statement, int index, std::optional<double> value) {
  if (value && std::isfinite(*value))
    statement.bind(index, *value);
  else
    statement.bind_null(index, sql::Type::real);
}

std::optional<double> optional_real(const sql::Statement& row, int column) {
  if (row.is_null(column)) return std::nullopt;
  return row.real(column);
}

Result<GpuSampleRecord> read_gpu_sample(const sql::Statement& row) {
  GpuSampleRecord s;
  s.id = row.int64(0);
  s.job_id = row.int64(1);
  s.gpu_index = static_cast<int>(row.int64(2));
  s.gpu_uuid = row.text(3);
  s.time = row.time(4);
  s.utilization_pct = optional_real(row, 5);
  s.memory_utilization_pct = optional_real(row, 6);
  s.memory_used_mib = row.int64(7);
  s.memory_total_mib = row.optional_int64(8);
  s.temperature_c = optional_real(row, 9);
  s.power_w = optional_real(row, 10);
  s.energy_mj = row.optional_int64(11);
  s.sm_clock_mhz = row.optional_int64(12);
  s.memory_clock_mhz = row.optional_int64(13);
  s.throttle_reasons = row.int64(14);
  KILN_TRY(auto processes, rows::read_json(row, 15));
  s.processes = processes.is_array() ? std::move(processes) : nlohmann::json::array();
  return s;
}

}  // namespace

Result<std::vector<std::int64_t>> SqlStore::add_gpu_samples(
    std::span<const GpuSampleRecord> samples) {
  static constexpr std::string_view k_sql =
      "INSERT INTO gpu_samples (job_id, gpu_index, gpu_uuid, time, util, mem_util, "
      "mem_used_mib, mem_total_mib, temp_c, power_w, energy_mj, sm_clock_mhz, mem_clock_mhz, "
      "throttle, processes) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
  std::lock_guard lock(mutex_);
  std::vector<std::int64_t> ids;
  if (samples.empty()) return ids;
  KILN_TRY(auto transaction, sql::Transaction::begin(*db_));
  for (const auto& s : samples) {
    KILN_TRY(auto* statement, cached(k_sql));
    sql::StatementUse use(*statement);
    use->bind(1, s.job_id)
        .bind(2, s.gpu_index)
        .bind(3, s.gpu_uuid)
        .bind(4, s.time != 0 ? s.time : now_ms());
    bind_real(*use, 5, s.utilization_pct);
    bind_real(*use, 6, s.memory_utilization_pct);
    use->bind(7, s.memory_used_mib).bind(8, s.memory_total_mib);
    bind_real(*use, 9, s.temperature_c);
    bind_real(*use, 10, s.power_w);
    use->bind(11, s.energy_mj)
        .bind(12, s.sm_clock_mhz)
        .bind(13, s.memory_clock_mhz)
        .bind(14, s.throttle_reasons)
        .bind(15, rows::json_text(s.processes.is_array() ? s.processes : nlohmann::json::array()));
    if (auto done = use->run(); !done) {
      if (use->violation() == sql::Violation::foreign_key)
        return fail(ErrorCode::not_found, "no job with id {}", s.job_id);
      return std::unexpected(done.error());
    }
    KILN_TRY(std::int64_t id, db_->last_insert_id());
    ids.push_back(id);
  }
  KILN_TRY_VOID(transaction.commit());
  return ids;
}

Result<std::vector<GpuSampleRecord>> SqlStore::list_gpu_samples(std::int64_t job_id) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_GPU_SAMPLE_COLUMNS
      " FROM gpu_samples WHERE job_id = ?1 ORDER BY gpu_index, time, id";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  sql::StatementUse use(*statement);
  use->bind(1, job_id);
  return rows::read_all<GpuSampleRecord>(*use, read_gpu_sample);
}

Status SqlStore::delete_gpu_samples(std::span<const std::int64_t> ids) {
  static constexpr std::string_view k_sql = "DELETE FROM gpu_samples WHERE id = ?1";
  std::lock_guard lock(mutex_);
  if (ids.empty()) return {};
  KILN_TRY(auto transaction, sql::Transaction::begin(*db_));
  for (auto id : ids) {
    KILN_TRY(auto* statement, cached(k_sql));
    sql::StatementUse use(*statement);
    use->bind(1, id);
    KILN_TRY_VOID(use->run());
  }
  return transaction.commit();
}

}  // namespace kiln::store
