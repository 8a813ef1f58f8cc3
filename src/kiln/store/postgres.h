#pragma once
// The PostgreSQL side of sql.h over libpq, internal to the store. One connection; statements are
// prepared on the server on first use, once per pattern of bound types (PostgreSQL types every
// parameter). Writers are serialised as SQLite's are: a write transaction, and a write statement
// outside one (which runs in a transaction of its own), first takes one transaction-level
// advisory lock. That keeps SQLite's semantics the store relies on: a log chunk's seq grows in
// commit order (live tails read `seq > last seen`), run numbers are MAX + 1, a lease check and
// its grant are atomic across processes.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/store/sql.h"

struct pg_conn;
struct pg_result;

namespace kiln::store::pg {

struct ConnectionCloser {
  void operator()(pg_conn* connection) const;
};
struct ResultClearer {
  void operator()(pg_result* result) const;
};
using ResultPtr = std::unique_ptr<pg_result, ResultClearer>;

// The key of the advisory lock every writer takes (pg_advisory_xact_lock): "kiln" in ASCII.
inline constexpr std::int64_t k_writer_lock = 0x6b696c6e;

class Statement;

class Database final : public sql::Database {
 public:
  // Connects to `url` (a libpq connection URI, postgresql://...), with `password` when not
  // empty (else libpq's own PGPASSWORD, PGPASSFILE, ~/.pgpass). `name` is what messages call
  // the database.
  static Result<std::unique_ptr<Database>> connect(const std::string& url,
                                                   const std::string& password);

  Status exec(std::string_view sql) override;
  Result<std::unique_ptr<sql::Statement>> prepare(std::string_view sql) override;
  Result<std::int64_t> last_insert_id() override;
  int changes() const override { return changes_; }
  std::string name() const override { return url_; }
  sql::Dialect dialect() const override { return sql::Dialect::postgres; }
  Status begin(Mode mode) override;
  Status commit() override;
  void rollback() override;
  Result<std::int64_t> schema_version() override;
  Status set_schema_version(std::int64_t version) override;

 private:
  friend class Statement;
  Database(std::unique_ptr<pg_conn, ConnectionCloser> connection, std::string url)
      : connection_(std::move(connection)), url_(std::move(url)) {}
  // The io_error for `result` (or the connection's last error) while running `sql`.
  Error error(std::string_view sql, const pg_result* result) const;
  // A lost connection (the server restarted) is made again between transactions; prepared
  // statements are then prepared again.
  Status reconnect_if_lost();
  // The name of the server-side statement for `sql` with these parameter types, prepared on
  // first use.
  Result<std::string> prepared(const std::string& sql, const std::vector<unsigned>& types);
  Result<std::int64_t> query_int(std::string_view sql);

  std::unique_ptr<pg_conn, ConnectionCloser> connection_;
  std::string url_;
  std::unordered_map<std::string, std::string> prepared_;  // sql + types -> statement name
  bool in_transaction_ = false;
  int changes_ = 0;
};

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

  sql::Violation violation() const override { return violation_; }
  std::string_view sql() const override { return sql_; }

 private:
  friend class Database;
  Statement(Database& db, std::string sql, bool writes)
      : db_(db), sql_(std::move(sql)), writes_(writes) {}
  void set(int index, unsigned type, std::optional<std::string> value);
  Result<ResultPtr> execute();

  Database& db_;
  std::string sql_;  // translated (postgres_dialect.h)
  bool writes_;      // INSERT, UPDATE or DELETE: serialised with the other writers
  std::vector<unsigned> types_;
  std::vector<std::optional<std::string>> values_;
  ResultPtr result_;
  int row_ = -1;  // the current row of result_
  sql::Violation violation_ = sql::Violation::none;
};

}  // namespace kiln::store::pg
