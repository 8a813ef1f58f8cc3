#include "kiln/store/postgres_store.h"

#include <fstream>

#include "kiln/store/host_store.h"
#include "kiln/store/postgres.h"
#include "kiln/store/sql_store_impl.h"
#include "kiln/store/sqlite_store.h"

namespace kiln::store {

bool is_postgres_url(std::string_view store) {
  return store.starts_with("postgresql://") || store.starts_with("postgres://");
}

Status check_postgres_url(std::string_view url, std::string_view password_file_key) {
  const auto k_instead =
      fmt::format("give it in a file ({}), PGPASSWORD or PGPASSFILE instead", password_file_key);
  const auto scheme_end = url.find("://");
  auto rest = scheme_end == std::string_view::npos ? url : url.substr(scheme_end + 3);
  const auto authority = rest.substr(0, rest.find_first_of("/?"));
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    if (authority.substr(0, at).find(':') != std::string_view::npos)
      return fail(ErrorCode::invalid_input, "the store URL carries a password: {}", k_instead);
  }
  if (const auto query = url.find('?'); query != std::string_view::npos) {
    const auto options = url.substr(query + 1);
    for (std::size_t start = 0; start <= options.size();) {
      const auto end = std::min(options.find('&', start), options.size());
      if (options.substr(start, end - start).starts_with("password="))
        return fail(ErrorCode::invalid_input, "the store URL carries a password: {}", k_instead);
      start = end + 1;
    }
  }
  return {};
}

std::filesystem::path default_postgres_journal_dir(std::string_view url) {
  // FNV-1a: the same name from every build, so that a newer kiln finds an older one's journals.
  std::uint64_t hash = 0xcbf29ce484222325;
  for (char c : url) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3;
  return host_state_dir({}) / fmt::format("journals-{:016x}", hash);
}

Result<std::string> read_store_password(const PostgresStoreOptions& options) {
  std::string password;
  if (!options.password_file.empty()) {
    std::ifstream file(options.password_file);
    if (!file)
      return fail(ErrorCode::io_error, "cannot read the store password file {}",
                  options.password_file.string());
    std::getline(file, password);
    if (password.empty())
      return fail(ErrorCode::invalid_input, "the store password file {} is empty",
                  options.password_file.string());
  }
  return password;
}

Result<std::unique_ptr<Store>> open_postgres_store(const PostgresStoreOptions& options) {
  KILN_TRY_VOID(check_postgres_url(options.url));
  KILN_TRY(auto password, read_store_password(options));
  KILN_TRY(auto db, pg::Database::connect(options.url, password));
  auto journals =
      options.journal_dir.empty() ? default_postgres_journal_dir(options.url) : options.journal_dir;
  return open_sql_store(std::move(db), std::move(journals), options.mark_interrupted_on_open);
}

}  // namespace kiln::store
