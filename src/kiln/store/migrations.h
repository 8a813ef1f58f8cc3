#pragma once
// Versioned schema of the store, one list for both databases. The schema is an ordered list of
// SQL scripts; script i brings a database from version i to i + 1, and the database records the
// version it is at (SQLite: `PRAGMA user_version`; PostgreSQL: the table kiln_schema). The
// scripts are SQLite's SQL; PostgreSQL runs them translated (postgres_dialect.h). Scripts are never
// edited once released: a change is a new script at the end (GPU leases, GPU samples, test results
// will each be one; benchmark results are version 2).

#include <span>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/store/sql.h"

namespace kiln::store {

// The scripts of this build of Kiln, oldest first.
std::span<const std::string_view> schema_migrations();

// The version a database is at after every script of this build ran.
int latest_schema_version();

// Brings `db` to version scripts.size(): every missing script runs in one write transaction,
// with the new version, so a failure (or a crash) leaves the database at
// its old version and another process opening the same file at the same time waits and then
// finds it migrated. A database at a newer version than scripts.size() is an `unsupported`
// error. Returns the version found before migrating.
Result<int> migrate(sql::Database& db, std::span<const std::string_view> scripts);

}  // namespace kiln::store
