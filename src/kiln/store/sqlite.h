#pragma once
// The SQLite side of sql.h, internal to the store: a connection in WAL mode and its prepared
// statements. Every failure becomes an io_error Result naming the database, the statement and
// sqlite3_errmsg. None of these classes lock: their owner does.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "kiln/core/result.h"
#include "kiln/store/sql.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::store::sqlite {

struct ConnectionCloser {
  void operator()(sqlite3* db) const;
};
struct StatementFinalizer {
  void operator()(sqlite3_stmt* statement) const;
};

class Database final : public sql::Database {
 public:
  // Opens (creating if needed) the file read-write, sets the busy timeout, turns foreign keys
  // on and puts the database in WAL mode with synchronous=NORMAL: a commit survives a crash
  // of the process; a power cut may lose the last commits but never corrupts the file.
  static Result<std::unique_ptr<Database>> open(const std::filesystem::path& path,
                                                int busy_timeout_ms);

  Status exec(std::string_view sql) override;
  Result<std::unique_ptr<sql::Statement>> prepare(std::string_view sql) override;
  Result<std::int64_t> last_insert_id() override;
  int changes() const override;
  std::string name() const override { return path_.string(); }
  sql::Dialect dialect() const override { return sql::Dialect::sqlite; }
  // BEGIN IMMEDIATE for a write: a busy database makes begin() wait (busy timeout) instead of
  // failing halfway through; BEGIN DEFERRED for a read.
  Status begin(Mode mode) override;
  Status commit() override;
  void rollback() override;
  Result<std::int64_t> schema_version() override;
  Status set_schema_version(std::int64_t version) override;

  // A single integer from a query such as "PRAGMA user_version".
  Result<std::int64_t> query_int(std::string_view sql);
  const std::filesystem::path& path() const { return path_; }

 private:
  Database(std::unique_ptr<sqlite3, ConnectionCloser> db, std::filesystem::path path)
      : db_(std::move(db)), path_(std::move(path)) {}
  Error error(std::string_view sql, int code) const;

  std::unique_ptr<sqlite3, ConnectionCloser> db_;
  std::filesystem::path path_;
};

// A prepared statement. Parameters are 1-based (?1, ?2...).
class Statement final : public sql::Statement {
 public:
  using sql::Statement::bind;
  Statement& bind(int index, std::int64_t value) override;
  Statement& bind(int index, std::string_view text) override;
  Statement& bind(int index, double value) override;
  Statement& bind_null(int index, sql::Type type) override;

  Result<bool> step() override;
  void reset() override;

  bool is_null(int column) const override;
  std::int64_t int64(int column) const override;
  std::string text(int column) const override;
  double real(int column) const override;
  std::optional<sql::Type> column_type(int column) const override;

  sql::Violation violation() const override;
  std::string_view sql() const override;

 private:
  friend class Database;
  explicit Statement(std::unique_ptr<sqlite3_stmt, StatementFinalizer> statement)
      : statement_(std::move(statement)) {}

  std::unique_ptr<sqlite3_stmt, StatementFinalizer> statement_;
  int bind_error_ = 0;  // first bind failure since the last reset
  int last_error_code_ = 0;
};

}  // namespace kiln::store::sqlite
