// kiln migrate --from sqlite PATH --to postgresql://... [--password-file FILE]: moves a host's
// history from its SQLite file into an empty PostgreSQL database (store/store_copy.h), for
// several `kiln serve` replicas to share (docs/scale-out.md). Prints the rows of every table.

#include <fmt/core.h>

#include <memory>
#include <string>
#include <vector>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/store/store_copy.h"

namespace kiln::cli {
namespace {

struct MigrateArgs {
  std::vector<std::string> from;
  std::string to;
  std::string password_file;
};

int migrate(const MigrateArgs& args) {
  if (args.from.size() != 2 || args.from[0] != "sqlite")
    return report_error(Error{ErrorCode::invalid_input,
                              "--from: expected `sqlite PATH` (the SQLite database to move)",
                              {}});
  if (!store::is_postgres_url(args.to))
    return report_error(Error{ErrorCode::invalid_input,
                              fmt::format("--to {}: expected a postgresql:// URL", args.to),
                              {}});
  store::PostgresStoreOptions target;
  target.url = args.to;
  target.password_file = args.password_file;
  auto copied = store::copy_sqlite_to_postgres(args.from[1], target);
  if (!copied) return report_error(copied.error());
  std::int64_t total = 0;
  for (const auto& table : *copied) {
    fmt::print("{:<20} {:>9} rows\n", table.name, table.target_rows);
    total += table.target_rows;
  }
  fmt::print("moved {} rows of {} tables from {} to {}\n", total, copied->size(), args.from[1],
             args.to);
  return 0;
}

}  // namespace

void add_migrate_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MigrateArgs>();
  auto* cmd = app.add_subcommand(
      "migrate", "move a host's history from SQLite into an empty PostgreSQL database");
  cmd->add_option("--from", args->from, "sqlite PATH: the database to move")
      ->expected(2)
      ->required();
  cmd->add_option("--to", args->to, "postgresql://USER@HOST/DB (no password in it)")->required();
  cmd->add_option("--password-file", args->password_file,
                  "the database password's file (else PGPASSWORD, PGPASSFILE)");
  cmd->callback([args, &exit_code] { exit_code = migrate(*args); });
}

}  // namespace kiln::cli
