#include "kiln/store/sqlite.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>

namespace kiln::store::sqlite {
namespace {

Error make_sqlite_error(sqlite3* db, int code, std::string_view sql) {
  const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  return Error{ErrorCode::io_error,
               fmt::format("database {}: {} (code {}) in: {}", file != nullptr ? file : "?",
                           message, code, sql::one_line(sql)),
               {}};
}

}  // namespace

void ConnectionCloser::operator()(sqlite3* db) const { sqlite3_close_v2(db); }
void StatementFinalizer::operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }

Result<std::unique_ptr<Database>> Database::open(const std::filesystem::path& path,
                                                 int busy_timeout_ms) {
  // A store holds job logs, and logs can hold what a job printed of its secrets: a new database
  // is readable by its owner only (SQLite gives its -wal and -shm files the same mode). A file
  // that exists keeps its mode, so a host store made group-writable on purpose stays so.
  if (int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); fd >= 0)
    ::close(fd);
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<sqlite3, ConnectionCloser> owned(raw);
  if (rc != SQLITE_OK) {
    return fail(ErrorCode::io_error, "cannot open database {}: {}", path.string(),
                raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc));
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  std::unique_ptr<Database> db(new Database(std::move(owned), path));
  KILN_TRY_VOID(db->exec("PRAGMA foreign_keys = ON"));
  // journal_mode answers with the mode it ended in; anything but "wal" (a read-only
  // directory, a file system without shared memory) would silently lose concurrency.
  constexpr std::string_view k_wal_sql = "PRAGMA journal_mode = WAL";
  KILN_TRY(auto wal, db->prepare(k_wal_sql));
  KILN_TRY(bool has_row, wal->step());
  std::string mode = has_row ? wal->text(0) : std::string{};
  wal->reset();
  if (mode != "wal") {
    return fail(ErrorCode::io_error, "database {}: cannot switch to WAL mode (mode is '{}')",
                path.string(), mode);
  }
  KILN_TRY_VOID(db->exec("PRAGMA synchronous = NORMAL"));
  return db;
}

Status Database::exec(std::string_view sql) {
  std::string text(sql);  // sqlite3_exec wants a terminated string
  int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(error(sql, rc));
  return {};
}

Result<std::unique_ptr<sql::Statement>> Database::prepare(std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v3(db_.get(), sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  std::unique_ptr<sqlite3_stmt, StatementFinalizer> owned(raw);
  if (rc != SQLITE_OK) return std::unexpected(error(sql, rc));
  if (raw == nullptr) return fail(ErrorCode::internal, "empty SQL statement: '{}'", sql);
  return std::unique_ptr<sql::Statement>(new Statement(std::move(owned)));
}

Result<std::int64_t> Database::query_int(std::string_view sql) {
  KILN_TRY(auto statement, prepare(sql));
  KILN_TRY(bool has_row, statement->step());
  if (!has_row) return fail(ErrorCode::internal, "no row from '{}'", sql);
  return statement->int64(0);
}

Result<std::int64_t> Database::last_insert_id() { return sqlite3_last_insert_rowid(db_.get()); }

int Database::changes() const { return sqlite3_changes(db_.get()); }

Status Database::begin(Mode mode) {
  return exec(mode == Mode::write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

Status Database::commit() { return exec("COMMIT"); }

// Failing to roll back leaves nothing better to do; SQLite rolls back on close anyway.
void Database::rollback() { (void)exec("ROLLBACK"); }

Result<std::int64_t> Database::schema_version() { return query_int("PRAGMA user_version"); }

Status Database::set_schema_version(std::int64_t version) {
  return exec(fmt::format("PRAGMA user_version = {}", version));
}

Error Database::error(std::string_view sql, int code) const {
  return make_sqlite_error(db_.get(), code, sql);
}

Statement& Statement::bind(int index, std::int64_t value) {
  int rc = sqlite3_bind_int64(statement_.get(), index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  // SQLITE_TRANSIENT: SQLite copies the text, so temporaries may be bound.
  int rc = sqlite3_bind_text64(statement_.get(), index, text.data(), text.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind(int index, double value) {
  int rc = sqlite3_bind_double(statement_.get(), index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind_null(int index, sql::Type /*type*/) {
  int rc = sqlite3_bind_null(statement_.get(), index);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Result<bool> Statement::step() {
  sqlite3* db = sqlite3_db_handle(statement_.get());
  if (bind_error_ != 0) {
    last_error_code_ = bind_error_;
    return std::unexpected(make_sqlite_error(db, bind_error_, sql()));
  }
  int rc = sqlite3_step(statement_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  last_error_code_ = rc;
  return std::unexpected(make_sqlite_error(db, rc, sql()));
}

void Statement::reset() {
  sqlite3_reset(statement_.get());
  sqlite3_clear_bindings(statement_.get());
  bind_error_ = 0;
  last_error_code_ = 0;
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(statement_.get(), column) == SQLITE_NULL;
}

std::int64_t Statement::int64(int column) const {
  return sqlite3_column_int64(statement_.get(), column);
}

std::string Statement::text(int column) const {
  const auto* data = sqlite3_column_text(statement_.get(), column);
  if (data == nullptr) return {};
  auto size = static_cast<std::size_t>(sqlite3_column_bytes(statement_.get(), column));
  return std::string(reinterpret_cast<const char*>(data), size);
}

double Statement::real(int column) const { return sqlite3_column_double(statement_.get(), column); }

std::string_view Statement::sql() const {
  const char* text = sqlite3_sql(statement_.get());
  return text != nullptr ? std::string_view(text) : std::string_view{};
}

std::optional<sql::Type> Statement::column_type(int column) const {
  switch (sqlite3_column_type(statement_.get(), column)) {
    case SQLITE_NULL:
      return std::nullopt;
    case SQLITE_INTEGER:
      return sql::Type::integer;
    case SQLITE_FLOAT:
      return sql::Type::real;
    default:
      return sql::Type::text;
  }
}

sql::Violation Statement::violation() const {
  if (last_error_code_ == SQLITE_CONSTRAINT_UNIQUE ||
      last_error_code_ == SQLITE_CONSTRAINT_PRIMARYKEY)
    return sql::Violation::unique;
  if (last_error_code_ == SQLITE_CONSTRAINT_FOREIGNKEY) return sql::Violation::foreign_key;
  return sql::Violation::none;
}

}  // namespace kiln::store::sqlite
