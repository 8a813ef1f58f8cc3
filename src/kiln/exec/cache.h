#pragma once
// actions/cache, actions/cache/restore and actions/cache/save on the local disk, shared by the
// runs of one repository. Entries are directories under <cache_root>/entries/ whose names are
// derived by hashing, so a key with '/' or '..' cannot reach outside the root; index.json maps
// key and version to entry, and a lock file serialises writers (parallel jobs save at once).
//
// As on GitHub: an entry is never changed once saved (saving an existing key warns and keeps
// the old one); lookups only see entries saved with the same `path` list (the "version");
// problems with the store are warnings and never fail the step, except fail-on-cache-miss.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/exec/actions.h"
#include "kiln/exec/actions_support.h"

namespace kiln::exec {

struct CacheEntry {
  std::string key;
  std::string version;
  std::string directory;        // entry directory name under <root>/entries/
  std::int64_t created_ms = 0;  // Unix time
  std::int64_t sequence = 0;    // creation order: larger is newer
  std::uint64_t size = 0;
  std::size_t files = 0;
};

class CacheStore {
 public:
  explicit CacheStore(std::filesystem::path root) : root_(std::move(root)) {}

  // The entry to restore: for each key in order (the primary key, then the restore keys), an
  // exact match, else the newest entry whose key starts with it. Only entries of `version`.
  Result<std::optional<CacheEntry>> find(const std::vector<std::string>& keys,
                                         std::string_view version) const;

  // Every entry, oldest first.
  Result<std::vector<CacheEntry>> entries() const;

  // The directory holding an entry's files: workspace/ (paths below the workspace, stored
  // relative to it) and absolute/ (everything else, stored by absolute path).
  std::filesystem::path content_path(const CacheEntry& entry) const;

  enum class SaveOutcome { saved, already_exists };
  // Saves a new entry: `fill` writes its content into the directory it is given; the entry is
  // committed only if no entry with this key and version appeared meanwhile.
  Result<SaveOutcome> save(
      std::string_view key, std::string_view version,
      const std::function<Result<CopyStats>(const std::filesystem::path&)>& fill);

 private:
  std::filesystem::path root_;
};

// The version of a cache for a `path` list: entries only match the same list.
std::string cache_version(const std::vector<std::string>& paths);

// GitHub's key rules: at most 512 characters, no commas; at most 10 keys in all.
Status validate_cache_keys(const std::vector<std::string>& keys);

enum class CacheAction {
  cache,    // actions/cache: restore now, save at the end of the job on a miss
  restore,  // actions/cache/restore
  save,     // actions/cache/save: save now
};

// Inputs: key, path (lines of @actions/glob patterns; `~` is HOME; relative to the
// workspace), restore-keys, fail-on-cache-miss, lookup-only, save-always (cache only),
// enableCrossOsArchive and upload-chunk-size (accepted, no effect). Outputs: cache-hit (set
// when an entry was found: "true" only for the exact key, as on GitHub), and for
// cache/restore also cache-primary-key and cache-matched-key.
Result<ActionResult> run_cache(CacheAction action, std::string_view uses,
                               const std::map<std::string, std::string>& with,
                               const ActionContext& context);

// The post step of actions/cache: saves `path` under `key` (from post.state).
Result<ActionResult> run_cache_post(const PostAction& post, const ActionContext& context);

}  // namespace kiln::exec
