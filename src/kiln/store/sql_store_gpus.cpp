// SqlStore: GPU leases and quarantine (see store.h). Everything but the fleet lists is scoped
// to this host.

#include "kiln/store/process_identity.h"
#include "kiln/store/sql_store_impl.h"

namespace kiln::store {

using sql::StatementUse;
using sql::Transaction;

namespace {

#define KILN_SQL_LEASE_COLUMNS \
  "gpu_uuid, holder, job_token, run_id, owner_pid, owner_start_time, granted_at"

GpuLease read_lease(const sql::Statement& row, const std::string& host) {
  GpuLease lease;
  lease.gpu_uuid = row.text(0);
  lease.holder = row.text(1);
  lease.job_token = row.text(2);
  lease.run_id = row.int64(3);
  lease.owner = {static_cast<int>(row.int64(4)), row.int64(5), host};
  lease.granted_at = row.int64(6);
  return lease;
}

}  // namespace

Result<std::vector<GpuLease>> SqlStore::reclaim_gpu_leases_locked() {
  static constexpr std::string_view k_select =
      "SELECT " KILN_SQL_LEASE_COLUMNS " FROM gpu_leases WHERE host = ?1 ORDER BY gpu_uuid";
  static constexpr std::string_view k_delete =
      "DELETE FROM gpu_leases WHERE host = ?1 AND gpu_uuid = ?2 AND owner_pid = ?3 "
      "AND owner_start_time = ?4";
  std::vector<GpuLease> dead;
  {
    KILN_TRY(auto* statement, cached(k_select));
    StatementUse use(*statement);
    use->bind(1, host_);
    while (true) {
      KILN_TRY(bool has_row, use->step());
      if (!has_row) break;
      auto lease = read_lease(*use, host_);
      if (!is_process_alive(lease.owner)) dead.push_back(std::move(lease));
    }
  }
  for (const auto& lease : dead) {
    KILN_TRY(auto* statement, cached(k_delete));
    StatementUse use(*statement);
    use->bind(1, host_)
        .bind(2, lease.gpu_uuid)
        .bind(3, lease.owner.pid)
        .bind(4, lease.owner.start_time);
    KILN_TRY_VOID(use->run());
  }
  return dead;
}

Result<bool> SqlStore::acquire_gpu_leases(std::span<const GpuLease> leases) {
  static constexpr std::string_view k_held =
      "SELECT 1 FROM gpu_leases WHERE host = ?1 AND gpu_uuid = ?2";
  static constexpr std::string_view k_insert =
      "INSERT INTO gpu_leases (host, " KILN_SQL_LEASE_COLUMNS
      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto transaction, Transaction::begin(*db_));
  KILN_TRY_VOID(reclaim_gpu_leases_locked());
  for (const auto& lease : leases) {
    KILN_TRY(auto* statement, cached(k_held));
    StatementUse use(*statement);
    use->bind(1, host_).bind(2, lease.gpu_uuid);
    KILN_TRY(bool held, use->step());
    if (held) return false;  // the transaction rolls back: nothing was granted
  }
  const auto self = current_process();
  const auto now = now_ms();
  for (const auto& lease : leases) {
    const auto& owner = lease.owner.pid != 0 ? lease.owner : self;
    KILN_TRY(auto* statement, cached(k_insert));
    StatementUse use(*statement);
    use->bind(1, host_)
        .bind(2, lease.gpu_uuid)
        .bind(3, lease.holder)
        .bind(4, lease.job_token)
        .bind(5, lease.run_id)
        .bind(6, owner.pid)
        .bind(7, owner.start_time)
        .bind(8, lease.granted_at != 0 ? lease.granted_at : now);
    KILN_TRY_VOID(use->run());
  }
  KILN_TRY_VOID(transaction.commit());
  return true;
}

Status SqlStore::release_gpu_leases(std::string_view job_token) {
  static constexpr std::string_view k_sql =
      "DELETE FROM gpu_leases WHERE host = ?1 AND job_token = ?2";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, host_).bind(2, job_token);
  return use->run();
}

Status SqlStore::set_gpu_lease_holder(std::string_view job_token, std::string_view holder) {
  static constexpr std::string_view k_sql =
      "UPDATE gpu_leases SET holder = ?3 WHERE host = ?1 AND job_token = ?2";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, host_).bind(2, job_token).bind(3, holder);
  return use->run();
}

Result<std::vector<GpuLease>> SqlStore::reclaim_gpu_leases() {
  std::lock_guard lock(mutex_);
  KILN_TRY(auto transaction, Transaction::begin(*db_));
  KILN_TRY(auto dead, reclaim_gpu_leases_locked());
  KILN_TRY_VOID(transaction.commit());
  return dead;
}

Result<std::vector<GpuLease>> SqlStore::list_gpu_leases() {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_LEASE_COLUMNS " FROM gpu_leases WHERE host = ?1 ORDER BY gpu_uuid";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, host_);
  std::vector<GpuLease> leases;
  while (true) {
    KILN_TRY(bool has_row, use->step());
    if (!has_row) break;
    leases.push_back(read_lease(*use, host_));
  }
  return leases;
}

Status SqlStore::quarantine_gpu(const GpuQuarantine& record) {
  static constexpr std::string_view k_sql =
      "INSERT INTO gpu_quarantine "
      "(host, gpu_uuid, reason, since, memory_limit_mib, manual_release) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (host, gpu_uuid) DO UPDATE SET "
      "reason = excluded.reason, since = excluded.since, "
      "memory_limit_mib = excluded.memory_limit_mib, manual_release = excluded.manual_release";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, host_)
      .bind(2, record.gpu_uuid)
      .bind(3, record.reason)
      .bind(4, record.since != 0 ? record.since : now_ms())
      .bind(5, static_cast<std::int64_t>(record.memory_limit_mib))
      .bind(6, record.manual_release ? 1 : 0);
  return use->run();
}

Result<bool> SqlStore::release_gpu_quarantine(std::string_view gpu_uuid) {
  static constexpr std::string_view k_sql =
      "DELETE FROM gpu_quarantine WHERE host = ?1 AND gpu_uuid = ?2";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, host_).bind(2, gpu_uuid);
  KILN_TRY_VOID(use->run());
  return db_->changes() > 0;
}

Result<std::vector<GpuQuarantine>> SqlStore::list_gpu_quarantine() {
  static constexpr std::string_view k_sql =
      "SELECT gpu_uuid, reason, since, memory_limit_mib, manual_release FROM gpu_quarantine "
      "WHERE host = ?1 "
      "ORDER BY gpu_uuid";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, host_);
  std::vector<GpuQuarantine> records;
  while (true) {
    KILN_TRY(bool has_row, use->step());
    if (!has_row) break;
    records.push_back({use->text(0), use->text(1), use->int64(2),
                       static_cast<std::uint64_t>(use->int64(3)), use->int64(4) != 0, host_});
  }
  return records;
}

Result<std::vector<GpuLease>> SqlStore::list_fleet_gpu_leases() {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_LEASE_COLUMNS ", host FROM gpu_leases ORDER BY host, gpu_uuid";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  std::vector<GpuLease> leases;
  while (true) {
    KILN_TRY(bool has_row, use->step());
    if (!has_row) break;
    leases.push_back(read_lease(*use, use->text(7)));
  }
  return leases;
}

Result<std::vector<GpuQuarantine>> SqlStore::list_fleet_gpu_quarantine() {
  static constexpr std::string_view k_sql =
      "SELECT gpu_uuid, reason, since, memory_limit_mib, manual_release, host "
      "FROM gpu_quarantine ORDER BY host, gpu_uuid";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  std::vector<GpuQuarantine> records;
  while (true) {
    KILN_TRY(bool has_row, use->step());
    if (!has_row) break;
    records.push_back({use->text(0), use->text(1), use->int64(2),
                       static_cast<std::uint64_t>(use->int64(3)), use->int64(4) != 0,
                       use->text(5)});
  }
  return records;
}

}  // namespace kiln::store
