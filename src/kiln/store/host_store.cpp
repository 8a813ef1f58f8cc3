#include "kiln/store/host_store.h"

#include <cstdlib>

#include "kiln/store/postgres_store.h"
#include "kiln/store/sqlite_store.h"

namespace kiln::store {

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

HostStoreLocation HostStoreLocation::from_setting(const std::string& setting) {
  HostStoreLocation location;
  if (is_postgres_url(setting))
    location.url = setting;
  else
    location.file = setting;
  return location;
}

HostStoreLocation HostStoreLocation::resolved() const {
  if (!url.empty() || !file.empty()) return *this;
  if (auto setting = env("KILN_HOST_STORE"); !setting.empty()) {
    auto location = from_setting(setting);
    location.password_file = password_file;
    return location;
  }
  HostStoreLocation location;
  location.file = default_state_dir() / "host.db";
  return location;
}

std::string HostStoreLocation::describe() const {
  auto used = resolved();
  return used.url.empty() ? used.file.string() : used.url;
}

Result<std::unique_ptr<Store>> open_host_store(const HostStoreLocation& location) {
  auto used = location.resolved();
  if (!used.url.empty()) {
    PostgresStoreOptions options;
    options.url = used.url;
    options.password_file = used.password_file;
    options.mark_interrupted_on_open = false;  // the host store holds no runs of its own
    return open_postgres_store(options);
  }
  SqliteStoreOptions options;
  options.mark_interrupted_on_open = false;
  return open_sqlite_store(used.file, options);
}

std::filesystem::path host_state_dir(const HostStoreLocation& location) {
  auto used = location.resolved();
  return used.url.empty() ? used.file.parent_path() : default_state_dir();
}

std::filesystem::path default_state_dir() {
  if (auto state = env("XDG_STATE_HOME"); !state.empty())
    return std::filesystem::path(state) / "kiln";
  auto home = env("HOME");
  return std::filesystem::path(home.empty() ? "/tmp" : home) / ".local/state/kiln";
}

}  // namespace kiln::store
