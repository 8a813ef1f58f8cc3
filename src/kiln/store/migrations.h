#pragma once
// Versioned schema of the store, one list for both databases. The schema is an ordered list of
// SQL scripts; script i brings a database from version i to i + 1, and the database records the
// version it is at (SQLite: `PRAGMA user_version`; PostgreSQL: the table kiln_schema). The
// scripts are SQLite's SQL; PostgreSQL runs them translated (postgres_dialect.h). Scripts are never
// edited once released: a change is a new script at the end (GPU leases, GPU samples, test results
// will each be one; benchmark results are version 2).

#include <optional>
#include <span>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/store/sql.h"

namespace kiln::store {

// One step of the schema. `sql` is SQLite's; PostgreSQL runs it translated, or `postgres` where
// the two need different SQL (a table rebuild SQLite needs and PostgreSQL does not; an empty
// script runs nothing but still counts as the version, so that both databases number alike).
struct Migration {
  constexpr Migration(std::string_view sqlite_sql) : sql(sqlite_sql) {}  // NOLINT: implicit
  constexpr Migration(const char* sqlite_sql) : sql(sqlite_sql) {}       // NOLINT: implicit
  constexpr Migration(std::string_view sqlite_sql, std::string_view postgres_sql)
      : sql(sqlite_sql), postgres(postgres_sql) {}

  std::string_view sql;
  std::optional<std::string_view> postgres;

  std::string_view script(sql::Dialect dialect) const {
    return dialect == sql::Dialect::postgres && postgres ? *postgres : sql;
  }
};

// The scripts of this build of Kiln, oldest first.
std::span<const Migration> schema_migrations();

// The version a database is at after every script of this build ran.
int latest_schema_version();

// Brings `db` to version scripts.size(): every missing script runs in one write transaction,
// with the new version, so a failure (or a crash) leaves the database at
// its old version and another process opening the same file at the same time waits and then
// finds it migrated. A database at a newer version than scripts.size() is an `unsupported`
// error. Returns the version found before migrating.
Result<int> migrate(sql::Database& db, std::span<const Migration> scripts);

}  // namespace kiln::store
