#pragma once
// The SQL connection the store's tables are written through, internal to the store: one
// interface with two implementations, SQLite (sqlite.h) and PostgreSQL (postgres.h), so that the
// Store (sql_store_impl.h) and its migrations are written once. Statements are written in the
// SQL both databases accept, with SQLite's 1-based parameters (?1, ?2...); the PostgreSQL side
// translates (postgres_dialect.h). Every failure is an io_error naming the database, the
// statement and the database's message. None of these classes lock: their owner does.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kiln/core/result.h"

namespace kiln::store::sql {

// The type of a bound NULL (PostgreSQL types every parameter; SQLite ignores it). `any`: the
// database infers it from where the parameter goes (an INSERT's column).
enum class Type { integer, real, text, any };

// Which database a connection is to, for the few scripts the two need written apart
// (migrations.h).
enum class Dialect { sqlite, postgres };

// Why the last step of a statement failed, when a constraint refused the row.
enum class Violation { none, unique, foreign_key };

// A prepared statement. A bind failure is remembered and reported by the next step(), so binds
// can be chained.
class Statement {
 public:
  virtual ~Statement() = default;

  virtual Statement& bind(int index, std::int64_t value) = 0;
  virtual Statement& bind(int index, std::string_view text) = 0;
  virtual Statement& bind(int index, double value) = 0;
  virtual Statement& bind_null(int index, Type type) = 0;
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, std::optional<std::int64_t> value) {
    return value ? bind(index, *value) : bind_null(index, Type::integer);
  }
  Statement& bind(int index, std::optional<int> value) {
    return value ? bind(index, static_cast<std::int64_t>(*value)) : bind_null(index, Type::integer);
  }
  // 0 is stored as NULL: the records' "not happened yet".
  Statement& bind_time(int index, std::int64_t ms) {
    return ms == 0 ? bind_null(index, Type::integer) : bind(index, ms);
  }

  // true: a row is ready to read; false: done.
  virtual Result<bool> step() = 0;
  // Runs a statement that returns no rows.
  Status run() {
    KILN_TRY_VOID(step());
    return {};
  }
  // Ends the current execution and clears the bindings, so the statement can be run again and
  // holds no read transaction open.
  virtual void reset() = 0;

  virtual bool is_null(int column) const = 0;
  virtual std::int64_t int64(int column) const = 0;
  virtual std::string text(int column) const = 0;
  virtual double real(int column) const = 0;
  // What the column of the current row holds; nothing for NULL (kiln migrate copies rows).
  virtual std::optional<Type> column_type(int column) const = 0;
  std::optional<std::int64_t> optional_int64(int column) const {
    if (is_null(column)) return std::nullopt;
    return int64(column);
  }
  // NULL reads as 0.
  std::int64_t time(int column) const { return int64(column); }

  // The constraint the last failed step violated, none if none.
  virtual Violation violation() const = 0;
  virtual std::string_view sql() const = 0;
};

class Database {
 public:
  enum class Mode {
    write,  // takes the write lock at once: writers are serialised, as SQLite's one writer
    read,   // a consistent snapshot for several SELECTs, no write lock
  };

  virtual ~Database() = default;

  // Runs one or more statements that return no rows (schema scripts).
  virtual Status exec(std::string_view sql) = 0;
  virtual Result<std::unique_ptr<Statement>> prepare(std::string_view sql) = 0;
  // The id the last INSERT gave its row.
  virtual Result<std::int64_t> last_insert_id() = 0;
  virtual int changes() const = 0;  // rows changed by the last statement
  // What error messages call the database (a file, a URL without its password).
  virtual std::string name() const = 0;
  virtual Dialect dialect() const = 0;

  virtual Status begin(Mode mode) = 0;
  virtual Status commit() = 0;
  virtual void rollback() = 0;

  // The schema version the database is at (0: a new database), and setting it (inside a write
  // transaction): SQLite's PRAGMA user_version, PostgreSQL's table kiln_schema.
  virtual Result<std::int64_t> schema_version() = 0;
  virtual Status set_schema_version(std::int64_t version) = 0;
};

// Resets a statement when it goes out of scope, so a cached statement never keeps a read
// transaction (and with it an old snapshot) open.
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

// A transaction that rolls back unless committed.
class Transaction {
 public:
  using Mode = Database::Mode;
  static Result<Transaction> begin(Database& db, Mode mode = Mode::write) {
    KILN_TRY_VOID(db.begin(mode));
    return Transaction(&db);
  }
  Status commit() {
    KILN_TRY_VOID(db_->commit());
    db_ = nullptr;
    return {};
  }
  ~Transaction() {
    if (db_ != nullptr) db_->rollback();
  }
  Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;  // null once committed, rolled back or moved from
};

// Statements are written over several lines; an error message wants them on one.
std::string one_line(std::string_view sql);

}  // namespace kiln::store::sql
