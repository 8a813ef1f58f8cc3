#include "kiln/store/sqlite.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>

namespace kiln::store::sqlite {
namespace {

// Statements are written over several lines; an error message wants them on one.
std::string one_line(std::string_view sql) {
  constexpr std::size_t k_max_length = 300;
  std::string line;
  bool space = false;
  for (char c : sql) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !line.empty();
      continue;
    }
    if (space) line += ' ';
    space = false;
    line += c;
    if (line.size() >= k_max_length) {
      line += "...";
      break;
    }
  }
  return line;
}

Error make_sqlite_error(sqlite3* db, int code, std::string_view sql) {
  const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  return Error{ErrorCode::io_error,
               fmt::format("database {}: {} (code {}) in: {}", file != nullptr ? file : "?",
                           message, code, one_line(sql)),
               {}};
}

}  // namespace

void ConnectionCloser::operator()(sqlite3* db) const { sqlite3_close_v2(db); }
void StatementFinalizer::operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }

Result<Database> Database::open(const std::filesystem::path& path, int busy_timeout_ms) {
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
  Database db(std::move(owned), path);
  KILN_TRY_VOID(db.exec("PRAGMA foreign_keys = ON"));
  // journal_mode answers with the mode it ended in; anything but "wal" (a read-only
  // directory, a file system without shared memory) would silently lose concurrency.
  constexpr std::string_view k_wal_sql = "PRAGMA journal_mode = WAL";
  KILN_TRY(Statement wal, db.prepare(k_wal_sql));
  KILN_TRY(bool has_row, wal.step());
  std::string mode = has_row ? wal.text(0) : std::string{};
  wal.reset();
  if (mode != "wal") {
    return fail(ErrorCode::io_error, "database {}: cannot switch to WAL mode (mode is '{}')",
                path.string(), mode);
  }
  KILN_TRY_VOID(db.exec("PRAGMA synchronous = NORMAL"));
  return db;
}

Status Database::exec(std::string_view sql) {
  std::string text(sql);  // sqlite3_exec wants a terminated string
  int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(error(sql, rc));
  return {};
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v3(db_.get(), sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  std::unique_ptr<sqlite3_stmt, StatementFinalizer> owned(raw);
  if (rc != SQLITE_OK) return std::unexpected(error(sql, rc));
  if (raw == nullptr) return fail(ErrorCode::internal, "empty SQL statement: '{}'", sql);
  return Statement(std::move(owned));
}

Result<std::int64_t> Database::query_int(std::string_view sql) {
  KILN_TRY(Statement statement, prepare(sql));
  KILN_TRY(bool has_row, statement.step());
  if (!has_row) return fail(ErrorCode::internal, "no row from '{}'", sql);
  return statement.int64(0);
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_.get()); }

int Database::changes() const { return sqlite3_changes(db_.get()); }

Error Database::error(std::string_view sql) const {
  return make_sqlite_error(db_.get(), sqlite3_extended_errcode(db_.get()), sql);
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

Statement& Statement::bind(int index, std::optional<std::int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, std::optional<int> value) {
  return value ? bind(index, static_cast<std::int64_t>(*value)) : bind_null(index);
}

Statement& Statement::bind(int index, double value) {
  int rc = sqlite3_bind_double(statement_.get(), index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind_null(int index) {
  int rc = sqlite3_bind_null(statement_.get(), index);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind_time(int index, std::int64_t ms) {
  return ms == 0 ? bind_null(index) : bind(index, ms);
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

Status Statement::run() {
  KILN_TRY_VOID(step());
  return {};
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

std::optional<std::int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
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

Result<Transaction> Transaction::begin(Database& db, Mode mode) {
  KILN_TRY_VOID(db.exec(mode == Mode::write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED"));
  return Transaction(&db);
}

Status Transaction::commit() {
  KILN_TRY_VOID(db_->exec("COMMIT"));
  db_ = nullptr;
  return {};
}

Transaction::~Transaction() {
  // Failing to roll back leaves nothing better to do; SQLite rolls back on close anyway.
  if (db_ != nullptr) (void)db_->exec("ROLLBACK");
}

bool is_unique_violation(int code) {
  return code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY;
}

bool is_foreign_key_violation(int code) { return code == SQLITE_CONSTRAINT_FOREIGNKEY; }

}  // namespace kiln::store::sqlite
