#include "kiln/store/store_copy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/store/postgres.h"
#include "kiln/store/sqlite.h"
#include "kiln/store/sqlite_store.h"

namespace kiln::store {
namespace {

Result<std::vector<std::string>> column_names(sqlite::Database& db, const std::string& table) {
  KILN_TRY(auto statement, db.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid"));
  statement->bind(1, std::string_view(table));
  std::vector<std::string> names;
  while (true) {
    KILN_TRY(bool has_row, statement->step());
    if (!has_row) break;
    names.push_back(statement->text(0));
  }
  return names;
}

Result<std::int64_t> count_rows(sql::Database& db, const std::string& table) {
  KILN_TRY(auto statement, db.prepare(fmt::format("SELECT COUNT(*) FROM {}", table)));
  KILN_TRY(bool has_row, statement->step());
  if (!has_row) return fail(ErrorCode::internal, "no count of {}", table);
  return statement->int64(0);
}

// Copies every row of `table`, each value with the type it has in SQLite.
Status copy_rows(sqlite::Database& from, sql::Database& to, const std::string& table,
                 const std::vector<std::string>& columns) {
  const auto list = fmt::format("{}", fmt::join(columns, ", "));
  std::vector<std::string> params;
  for (std::size_t i = 1; i <= columns.size(); ++i) params.push_back(fmt::format("?{}", i));
  KILN_TRY(auto read, from.prepare(fmt::format("SELECT {} FROM {} ORDER BY rowid", list, table)));
  KILN_TRY(auto write, to.prepare(fmt::format("INSERT INTO {} ({}) VALUES ({})", table, list,
                                              fmt::join(params, ", "))));
  while (true) {
    KILN_TRY(bool has_row, read->step());
    if (!has_row) break;
    for (int i = 0; i < static_cast<int>(columns.size()); ++i) {
      const auto type = read->column_type(i);
      if (!type)
        write->bind_null(i + 1, sql::Type::any);
      else if (*type == sql::Type::integer)
        write->bind(i + 1, read->int64(i));
      else if (*type == sql::Type::real)
        write->bind(i + 1, read->real(i));
      else
        write->bind(i + 1, std::string_view(read->text(i)));
    }
    KILN_TRY_VOID(write->run());
    write->reset();
  }
  return {};
}

// Moves the sequence of each serial column of `table` past its largest copied value.
Status advance_sequences(sql::Database& to, const std::string& table) {
  KILN_TRY(auto serials, to.prepare("SELECT column_name FROM information_schema.columns "
                                    "WHERE table_schema = current_schema() AND table_name = ?1 "
                                    "AND column_default LIKE 'nextval(%'"));
  serials->bind(1, std::string_view(table));
  std::vector<std::string> columns;
  while (true) {
    KILN_TRY(bool has_row, serials->step());
    if (!has_row) break;
    columns.push_back(serials->text(0));
  }
  for (const auto& column : columns) {
    KILN_TRY_VOID(to.exec(
        fmt::format("SELECT setval(pg_get_serial_sequence('{0}', '{1}'), COALESCE(MAX({1}), 1), "
                    "MAX({1}) IS NOT NULL) FROM {0}",
                    table, column)));
  }
  return {};
}

}  // namespace

Result<std::vector<CopiedTable>> copy_sqlite_to_postgres(const std::filesystem::path& sqlite_path,
                                                         const PostgresStoreOptions& target) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(sqlite_path, ec))
    return fail(ErrorCode::invalid_input, "--from {}: no such SQLite database",
                sqlite_path.string());
  {
    // Both at the latest schema, so that their tables and columns are the same; neither judges
    // runs interrupted (a live kiln may own them; the copy keeps them as they are).
    SqliteStoreOptions source_options;
    source_options.mark_interrupted_on_open = false;
    KILN_TRY_VOID(open_sqlite_store(sqlite_path, source_options));
    auto target_options = target;
    target_options.mark_interrupted_on_open = false;
    KILN_TRY_VOID(open_postgres_store(target_options));
  }
  KILN_TRY(auto from, sqlite::Database::open(sqlite_path, 10'000));
  KILN_TRY(auto password, read_store_password(target));
  KILN_TRY(auto to, pg::Database::connect(target.url, password));

  KILN_TRY(std::int64_t target_runs, count_rows(*to, "runs"));
  if (target_runs > 0)
    return fail(ErrorCode::invalid_input,
                "--to {}: the database holds {} runs already; kiln migrate fills an empty one",
                target.url, target_runs);

  KILN_TRY(auto snapshot, sql::Transaction::begin(*from, sql::Transaction::Mode::read));
  KILN_TRY(auto tables_query, from->prepare("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"));
  std::vector<std::string> tables;
  while (true) {
    KILN_TRY(bool has_row, tables_query->step());
    if (!has_row) break;
    tables.push_back(tables_query->text(0));
  }

  std::vector<CopiedTable> copied;
  KILN_TRY(auto transaction, sql::Transaction::begin(*to));
  for (const auto& table : tables) {
    KILN_TRY(auto columns, column_names(*from, table));
    KILN_TRY_VOID(copy_rows(*from, *to, table, columns));
    KILN_TRY_VOID(advance_sequences(*to, table));
    CopiedTable counts{.name = table};
    KILN_TRY(counts.source_rows, count_rows(*from, table));
    KILN_TRY(counts.target_rows, count_rows(*to, table));
    if (counts.source_rows != counts.target_rows)
      return fail(ErrorCode::internal, "table {}: {} rows read, {} in the target", table,
                  counts.source_rows, counts.target_rows);
    copied.push_back(std::move(counts));
  }
  KILN_TRY_VOID(transaction.commit());
  KILN_TRY_VOID(snapshot.commit());
  return copied;
}

}  // namespace kiln::store
