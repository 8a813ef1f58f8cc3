#pragma once
// `kiln migrate --from sqlite PATH --to postgresql://...`: a host's whole history (runs, jobs,
// steps, logs, artifacts, benchmarks, test results, GPU samples, leases, deliveries...) moved
// from its SQLite file into an empty PostgreSQL database, ids kept, in one transaction.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/store/postgres_store.h"

namespace kiln::store {

struct CopiedTable {
  std::string name;
  std::int64_t source_rows = 0;
  std::int64_t target_rows = 0;  // counted in the target after the copy
};

// Migrates both databases to the latest schema first, then copies every table of the schema
// (in the order the migrations created them, so that a row's references come before it) and
// moves each id sequence past the copied ids. A target that holds runs already is refused
// (invalid_input): ids would clash. All or nothing: a failure leaves the target as it was.
Result<std::vector<CopiedTable>> copy_sqlite_to_postgres(const std::filesystem::path& sqlite_path,
                                                         const PostgresStoreOptions& target);

}  // namespace kiln::store
