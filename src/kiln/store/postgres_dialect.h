#pragma once
// The store's statements and migrations are written once, in SQLite's SQL (sql.h); this is what
// PostgreSQL needs changed in them, internal to the store.

#include <string>
#include <string_view>

namespace kiln::store::pg {

// `sql` as PostgreSQL takes it: parameters ?N become $N; in schema scripts the column types
// INTEGER PRIMARY KEY AUTOINCREMENT become BIGSERIAL PRIMARY KEY, INTEGER becomes BIGINT (SQLite's
// integers are 64-bit) and REAL becomes DOUBLE PRECISION. Quoted text and comments are left as
// they are.
std::string to_postgres(std::string_view sql);

// PostgreSQL's text refuses a NUL byte and invalid UTF-8, which SQLite stores: a job may print
// anything. Both are replaced by U+FFFD, so that a line is kept rather than the write refused.
std::string to_postgres_text(std::string_view text);

}  // namespace kiln::store::pg
