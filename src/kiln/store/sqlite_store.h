#pragma once
// The default Store: one SQLite file in WAL mode (DESIGN.md: `<repo>/.kiln/kiln.db` for
// `kiln run`, the config's path for `kiln serve`).
//
// Concurrency: one connection per SqliteStore, guarded by one mutex, so every call is
// serialised within the process (calls are short; log appends are single-row commits).
// Across processes SQLite's locking does the work: readers never wait for the writer (WAL),
// writers wait up to busy_timeout_ms for each other, then fail with io_error.
// Durability: synchronous=NORMAL in WAL mode; a committed call survives a crash of the
// process; a power cut may lose the last commits but never corrupts the database.

#include <filesystem>
#include <memory>

#include "kiln/core/result.h"
#include "kiln/store/store.h"

namespace kiln::store {

struct SqliteStoreOptions {
  // How long a write waits for another process's write lock before failing.
  int busy_timeout_ms = 10'000;
  // Run mark_interrupted() once the database is open, so a crashed run never stays "running".
  bool mark_interrupted_on_open = true;
};

// Opens the database at `path`, creating it and its parent directories if needed, and migrates
// it to the latest schema (migrations.h). A database from a newer Kiln is an `unsupported`
// error; any SQLite failure an io_error naming the statement and SQLite's message.
Result<std::unique_ptr<Store>> open_sqlite_store(const std::filesystem::path& path,
                                                 const SqliteStoreOptions& options = {});

}  // namespace kiln::store
