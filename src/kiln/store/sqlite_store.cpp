#include "kiln/store/sqlite_store.h"

#include <cstdlib>

#include <system_error>

#include "kiln/store/log_journal.h"
#include "kiln/store/sql_store_impl.h"
#include "kiln/store/sqlite.h"

namespace kiln::store {

Result<std::unique_ptr<Store>> open_sqlite_store(const std::filesystem::path& path,
                                                 const SqliteStoreOptions& options) {
  if (path.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
    if (error) {
      return fail(ErrorCode::io_error, "cannot create directory {} for the database: {}",
                  path.parent_path().string(), error.message());
    }
  }
  KILN_TRY(auto db, sqlite::Database::open(path, options.busy_timeout_ms));
  return open_sql_store(std::move(db), journal_dir(path), options.mark_interrupted_on_open);
}

}  // namespace kiln::store
