#pragma once
// The host store: where GPU leases and quarantine live (store.h "GPU leases of this host"). By
// default one SQLite file per host, so that every kiln process of the host sees every grant;
// kiln.yml `host_store: postgresql://...` puts them in a database that a fleet shares, each row
// keyed by its host, so that `kiln gpus --all-hosts` and every replica of `kiln serve` see every
// host's leases and quarantine (docs/scale-out.md#gpus-across-hosts).

#include <filesystem>
#include <memory>
#include <string>

#include "kiln/core/result.h"
#include "kiln/store/store.h"

namespace kiln::store {

struct HostStoreLocation {
  std::filesystem::path file{};  // a SQLite file; empty (and no url): default_host_store_path()
  std::string url{};             // postgresql://...: a shared database (file is then unused)
  // For a url: the file whose first line is the password (else PGPASSWORD, ~/.pgpass).
  std::filesystem::path password_file{};

  // The setting given: a postgresql:// URL goes to url, anything else to file.
  static HostStoreLocation from_setting(const std::string& setting);
  // The location used: this one when set, else $KILN_HOST_STORE (a path or a URL), else the
  // default SQLite file of this host.
  HostStoreLocation resolved() const;
  // For messages: the URL or the file.
  std::string describe() const;
};

// Opens (creating and migrating) the host store at `location.resolved()`. It holds no runs: no
// run is marked interrupted on open.
Result<std::unique_ptr<Store>> open_host_store(const HostStoreLocation& location);

// The directory of this host's own state (the fetched actions' cache, journals): beside the host
// store's file, or the default state directory when the host store is a database.
std::filesystem::path host_state_dir(const HostStoreLocation& location);

// $XDG_STATE_HOME/kiln, else ~/.local/state/kiln.
std::filesystem::path default_state_dir();

}  // namespace kiln::store
