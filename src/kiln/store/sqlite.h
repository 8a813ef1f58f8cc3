#pragma once
// Thin RAII layer over the SQLite C API, internal to the store: a connection, prepared
// statements and IMMEDIATE transactions. Every failure becomes an io_error Result naming the
// database, the statement and sqlite3_errmsg. None of these classes lock: their owner does.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kiln/core/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::store::sqlite {

struct ConnectionCloser {
  void operator()(sqlite3* db) const;
};
struct StatementFinalizer {
  void operator()(sqlite3_stmt* statement) const;
};

class Statement;

class Database {
 public:
  // Opens (creating if needed) the file read-write, sets the busy timeout, turns foreign keys
  // on and puts the database in WAL mode with synchronous=NORMAL: a commit survives a crash
  // of the process; a power cut may lose the last commits but never corrupts the file.
  static Result<Database> open(const std::filesystem::path& path, int busy_timeout_ms);

  // Runs one or more statements that return no rows (schema scripts, pragmas).
  Status exec(std::string_view sql);
  Result<Statement> prepare(std::string_view sql);
  // A single integer from a query such as "PRAGMA user_version".
  Result<std::int64_t> query_int(std::string_view sql);

  std::int64_t last_insert_rowid() const;
  int changes() const;  // rows changed by the last statement
  const std::filesystem::path& path() const { return path_; }
  sqlite3* handle() const { return db_.get(); }

  // The io_error for the connection's latest failure while running `sql`.
  Error error(std::string_view sql) const;
  Error error(std::string_view sql, int code) const;

 private:
  Database(std::unique_ptr<sqlite3, ConnectionCloser> db, std::filesystem::path path)
      : db_(std::move(db)), path_(std::move(path)) {}

  std::unique_ptr<sqlite3, ConnectionCloser> db_;
  std::filesystem::path path_;
};

// A prepared statement. Parameters are 1-based (?1, ?2...). A bind failure is remembered and
// reported by the next step(), so binds can be chained.
class Statement {
 public:
  Statement() = default;

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::optional<std::int64_t> value);
  Statement& bind(int index, std::optional<int> value);
  Statement& bind(int index, double value);
  Statement& bind_null(int index);
  // 0 is stored as NULL: the records' "not happened yet".
  Statement& bind_time(int index, std::int64_t ms);

  // true: a row is ready to read; false: done.
  Result<bool> step();
  // Runs a statement that returns no rows.
  Status run();
  // Ends the current execution and clears the bindings, so the statement can be run again
  // and holds no read transaction open.
  void reset();

  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  std::optional<std::int64_t> optional_int64(int column) const;
  std::string text(int column) const;
  double real(int column) const;
  // NULL reads as 0.
  std::int64_t time(int column) const { return int64(column); }

  // Extended result code of the last failed step (e.g. SQLITE_CONSTRAINT_UNIQUE), 0 if none.
  int last_error_code() const { return last_error_code_; }
  std::string_view sql() const;

 private:
  friend class Database;
  explicit Statement(std::unique_ptr<sqlite3_stmt, StatementFinalizer> statement)
      : statement_(std::move(statement)) {}

  std::unique_ptr<sqlite3_stmt, StatementFinalizer> statement_;
  int bind_error_ = 0;  // first bind failure since the last reset
  int last_error_code_ = 0;
};

// Resets a statement when it goes out of scope, so a cached statement never keeps a read
// transaction (and with it an old WAL snapshot) open.
class StatementUse {
 public:
  explicit StatementUse(Statement& statement) : statement_(statement) {}
  ~StatementUse() { statement_.reset(); }
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;
  Statement* operator->() { return &statement_; }
  Statement& operator*() { return statement_; }

 private:
  Statement& statement_;
};

// BEGIN IMMEDIATE ... COMMIT (or a read snapshot). IMMEDIATE takes the write lock at once, so a
// busy database makes begin() wait (busy timeout) instead of failing halfway through. Rolls back
// unless committed.
class Transaction {
 public:
  enum class Mode {
    write,  // BEGIN IMMEDIATE
    read,   // BEGIN DEFERRED: a consistent snapshot for several SELECTs, no write lock
  };
  static Result<Transaction> begin(Database& db, Mode mode = Mode::write);
  Status commit();
  ~Transaction();
  Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;  // null once committed, rolled back or moved from
};

// True when `code` (an extended result code) is a UNIQUE or PRIMARY KEY violation.
bool is_unique_violation(int code);
// True when `code` is a FOREIGN KEY violation (a row refers to one that does not exist).
bool is_foreign_key_violation(int code);

}  // namespace kiln::store::sqlite
