#pragma once
// The Store on PostgreSQL, for several `kiln serve` replicas sharing one database
// (docs/scale-out.md): the same tables, statements and versioned migrations as SQLite's store
// (migrations.h; the version is in the table kiln_schema), over libpq.
//
// Concurrency: one connection per store, guarded by one mutex as SQLite's is; across processes
// writers are serialised by one advisory lock (postgres.h), readers never wait.
// Durability: a call returns once PostgreSQL committed it.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/store/store.h"

namespace kiln::store {

// True for a store setting that names a PostgreSQL database (postgresql:// or postgres://)
// rather than a SQLite file.
bool is_postgres_url(std::string_view store);

// A URL that carries a password (postgresql://user:secret@host/db, ?password=...) is refused:
// a password belongs in a file or the environment, not in kiln.yml. The message says where
// it may go instead: password_file_key, the kiln.yml key of the password's file.
Status check_postgres_url(std::string_view url,
                          std::string_view password_file_key = "store_password_file");

struct PostgresStoreOptions {
  std::string url;  // postgresql://[user@]host[:port]/database[?options], no password
  // When not empty: the file whose first line is the password. Else libpq's own PGPASSWORD,
  // PGPASSFILE or ~/.pgpass.
  std::filesystem::path password_file;
  // Where running jobs' log journals are kept (log_journal.h): a directory of this host.
  std::filesystem::path journal_dir;
  bool mark_interrupted_on_open = true;
};

// The password of options.password_file (its first line), empty without one.
Result<std::string> read_store_password(const PostgresStoreOptions& options);

// Connects, migrates the database to the latest schema (a database from a newer Kiln is an
// `unsupported` error) and recovers what a dead kiln of this host left, as open_sqlite_store.
Result<std::unique_ptr<Store>> open_postgres_store(const PostgresStoreOptions& options);

// The journal directory of a PostgreSQL store when none is given: beside the host store
// (host_store.h host_state_dir), one per database URL.
std::filesystem::path default_postgres_journal_dir(std::string_view url);

}  // namespace kiln::store
