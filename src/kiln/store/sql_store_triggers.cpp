// SqlStore: the events `kiln serve` accepted (see store.h).

#include "kiln/store/process_identity.h"
#include "kiln/store/sql_rows.h"
#include "kiln/store/sql_store_impl.h"

namespace kiln::store {

using sql::StatementUse;

namespace {

#define KILN_SQL_TRIGGER_COLUMNS                                                           \
  "id, delivery, repository, event, ref, sha, sender, status, message, payload, run_ids, " \
  "created_at, updated_at, rerun"

Result<Trigger> read_trigger(const sql::Statement& row) {
  Trigger trigger;
  trigger.id = row.int64(0);
  trigger.delivery = row.is_null(1) ? "" : row.text(1);
  trigger.repository = row.text(2);
  trigger.event = row.text(3);
  trigger.ref = row.text(4);
  trigger.sha = row.text(5);
  trigger.sender = row.text(6);
  KILN_TRY(trigger.status, parse_trigger_status(row.text(7)));
  trigger.message = row.text(8);
  KILN_TRY(trigger.payload, rows::read_json(row, 9));
  KILN_TRY(trigger.run_ids, rows::read_json(row, 10));
  trigger.created_at = row.int64(11);
  trigger.updated_at = row.int64(12);
  KILN_TRY(trigger.rerun, rows::read_json(row, 13));
  return trigger;
}

}  // namespace

Result<std::optional<std::int64_t>> SqlStore::create_trigger(const Trigger& trigger) {
  // ON CONFLICT DO NOTHING: a redelivery (the same delivery id) or a replay (the same
  // identity) changes nothing and is told apart by changes() == 0.
  static constexpr std::string_view k_sql =
      "INSERT INTO triggers (delivery, repository, event, ref, sha, sender, status, message, "
      "payload, run_ids, created_at, updated_at, rerun, identity) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
      "ON CONFLICT DO NOTHING";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  const auto now = now_ms();
  {
    StatementUse use(*statement);
    if (trigger.delivery.empty())
      use->bind_null(1, sql::Type::text);
    else
      use->bind(1, trigger.delivery);
    use->bind(2, trigger.repository)
        .bind(3, trigger.event)
        .bind(4, trigger.ref)
        .bind(5, trigger.sha)
        .bind(6, trigger.sender)
        .bind(7, to_string(trigger.status))
        .bind(8, trigger.message)
        .bind(9, rows::json_text(trigger.payload))
        .bind(10, rows::json_text(trigger.run_ids))
        .bind(11, trigger.created_at != 0 ? trigger.created_at : now)
        .bind(12, trigger.updated_at != 0 ? trigger.updated_at : now)
        .bind(13, rows::json_text(trigger.rerun));
    if (trigger.identity.empty())
      use->bind_null(14, sql::Type::text);
    else
      use->bind(14, trigger.identity);
    KILN_TRY_VOID(use->run());
  }
  if (db_->changes() == 0) return std::optional<std::int64_t>{};
  KILN_TRY(std::int64_t id, db_->last_insert_id());
  return std::optional<std::int64_t>{id};
}

Status SqlStore::update_trigger(const Trigger& trigger) {
  static constexpr std::string_view k_sql =
      "UPDATE triggers SET status = ?2, message = ?3, run_ids = ?4, updated_at = ?5 "
      "WHERE id = ?1";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  {
    StatementUse use(*statement);
    use->bind(1, trigger.id)
        .bind(2, to_string(trigger.status))
        .bind(3, trigger.message)
        .bind(4, rows::json_text(trigger.run_ids))
        .bind(5, trigger.updated_at != 0 ? trigger.updated_at : now_ms());
    KILN_TRY_VOID(use->run());
  }
  if (db_->changes() == 0) return fail(ErrorCode::not_found, "no trigger {}", trigger.id);
  return {};
}

Result<Trigger> SqlStore::get_trigger(std::int64_t trigger_id) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_TRIGGER_COLUMNS " FROM triggers WHERE id = ?1";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, trigger_id);
  KILN_TRY(bool has_row, use->step());
  if (!has_row) return fail(ErrorCode::not_found, "no trigger {}", trigger_id);
  return read_trigger(*use);
}

Result<std::vector<Trigger>> SqlStore::list_triggers(std::optional<TriggerStatus> status,
                                                     int limit) {
  static constexpr std::string_view k_sql =
      "SELECT " KILN_SQL_TRIGGER_COLUMNS
      " FROM triggers "
      "WHERE (?1 IS NULL OR status = ?1) ORDER BY id DESC LIMIT ?2";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  if (status)
    use->bind(1, to_string(*status));
  else
    use->bind_null(1, sql::Type::text);
  use->bind(2, rows::sql_limit(limit));
  std::vector<Trigger> triggers;
  while (true) {
    KILN_TRY(bool has_row, use->step());
    if (!has_row) break;
    KILN_TRY(auto trigger, read_trigger(*use));
    triggers.push_back(std::move(trigger));
  }
  return triggers;
}

Result<std::optional<std::string>> SqlStore::get_poll_head(std::string_view repository,
                                                           std::string_view ref) {
  static constexpr std::string_view k_sql =
      "SELECT sha FROM poll_heads WHERE repository = ?1 AND ref = ?2";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, repository).bind(2, ref);
  KILN_TRY(bool has_row, use->step());
  if (!has_row) return std::optional<std::string>{};
  return std::optional<std::string>{use->text(0)};
}

Status SqlStore::set_poll_head(std::string_view repository, std::string_view ref,
                               std::string_view sha) {
  static constexpr std::string_view k_sql =
      "INSERT INTO poll_heads (repository, ref, sha, updated_at) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT (repository, ref) DO UPDATE SET sha = excluded.sha, "
      "updated_at = excluded.updated_at";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, repository).bind(2, ref).bind(3, sha).bind(4, now_ms());
  return use->run();
}

Result<std::map<TriggerStatus, std::int64_t>> SqlStore::count_triggers() {
  static constexpr std::string_view k_sql = "SELECT status, COUNT(*) FROM triggers GROUP BY status";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  std::map<TriggerStatus, std::int64_t> counts;
  while (true) {
    KILN_TRY(bool has_row, use->step());
    if (!has_row) break;
    KILN_TRY(auto status, parse_trigger_status(use->text(0)));
    counts[status] = use->int64(1);
  }
  return counts;
}

// --- replicas (schema version 10) ------------------------------------------------------

Result<bool> SqlStore::claim_trigger(std::int64_t trigger_id) {
  // One statement: of two replicas claiming at once, the second finds the trigger running.
  static constexpr std::string_view k_sql =
      "UPDATE triggers SET status = 'running', claimed_by = ?2, updated_at = ?3 "
      "WHERE id = ?1 AND status = 'queued'";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, trigger_id).bind(2, replica_).bind(3, now_ms());
  KILN_TRY_VOID(use->run());
  return db_->changes() == 1;
}

Status SqlStore::beat(TimeMs now) {
  static constexpr std::string_view k_sql =
      "INSERT INTO replicas (id, host, pid, start_time, heartbeat_at) VALUES (?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, replica_)
      .bind(2, self_.host)
      .bind(3, self_.pid)
      .bind(4, self_.start_time)
      .bind(5, now != 0 ? now : now_ms());
  return use->run();
}

Result<std::vector<std::int64_t>> SqlStore::list_orphaned_triggers(TimeMs stale_before) {
  static constexpr std::string_view k_sql =
      "SELECT t.id, CASE WHEN r.id IS NULL OR r.heartbeat_at < ?1 THEN 1 ELSE 0 END, r.host, "
      "r.pid, r.start_time "
      "FROM triggers t LEFT JOIN replicas r ON r.id = t.claimed_by "
      "WHERE t.status = 'running' ORDER BY t.id";
  std::lock_guard lock(mutex_);
  KILN_TRY(auto* statement, cached(k_sql));
  StatementUse use(*statement);
  use->bind(1, stale_before);
  std::vector<std::int64_t> ids;
  while (true) {
    KILN_TRY(bool has_row, use->step());
    if (!has_row) break;
    const bool stale = use->int64(1) != 0;
    const ProcessIdentity claimer{static_cast<int>(use->int64(3)), use->int64(4), use->text(2)};
    if (stale || (claimer.host == host_ && !is_process_alive(claimer)))
      ids.push_back(use->int64(0));
  }
  return ids;
}

}  // namespace kiln::store
