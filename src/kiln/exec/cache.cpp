#include "kiln/exec/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "kiln/exec/artifact_glob.h"

namespace kiln::exec {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t k_max_key_length = 512;
constexpr std::size_t k_max_keys = 10;
constexpr int k_index_format = 1;

// An flock() on <root>/index.lock for as long as it lives: shared for readers, exclusive for
// writers, across processes (two `kiln run`s) and threads (each opens its own descriptor).
class IndexLock {
 public:
  static Result<IndexLock> acquire(const fs::path& root, bool exclusive) {
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) return fail(ErrorCode::io_error, "cannot create {}: {}", root.string(), ec.message());
    fs::path path = root / "index.lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return fail(ErrorCode::io_error, "cannot open {}: {}", path.string(), std::strerror(errno));
    }
    IndexLock lock(fd);
    int rc;
    do {
      rc = ::flock(fd, exclusive ? LOCK_EX : LOCK_SH);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      return fail(ErrorCode::io_error, "cannot lock {}: {}", path.string(), std::strerror(errno));
    }
    return lock;
  }
  IndexLock(IndexLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  IndexLock& operator=(IndexLock&&) = delete;
  IndexLock(const IndexLock&) = delete;
  ~IndexLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }

 private:
  explicit IndexLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

struct Index {
  std::int64_t next_sequence = 1;
  std::vector<CacheEntry> entries;
};

Result<Index> read_index(const fs::path& root) {
  Index index;
  fs::path path = root / "index.json";
  std::ifstream in(path);
  if (!in) return index;  // no cache saved yet
  try {
    auto json = nlohmann::json::parse(in);
    if (json.value("format", 0) != k_index_format) {
      return fail(ErrorCode::io_error, "cache index {} has an unknown format", path.string());
    }
    index.next_sequence = json.at("next_sequence").get<std::int64_t>();
    for (const auto& item : json.at("entries")) {
      CacheEntry entry;
      entry.key = item.at("key").get<std::string>();
      entry.version = item.at("version").get<std::string>();
      entry.directory = item.at("directory").get<std::string>();
      entry.created_ms = item.at("created_ms").get<std::int64_t>();
      entry.sequence = item.at("sequence").get<std::int64_t>();
      entry.size = item.at("size").get<std::uint64_t>();
      entry.files = item.at("files").get<std::size_t>();
      index.entries.push_back(std::move(entry));
    }
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::io_error, "cache index {} is damaged ({}); delete it to start over",
                path.string(), e.what());
  }
  return index;
}

Status write_index(const fs::path& root, const Index& index) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& entry : index.entries) {
    entries.push_back({{"key", entry.key},
                       {"version", entry.version},
                       {"directory", entry.directory},
                       {"created_ms", entry.created_ms},
                       {"sequence", entry.sequence},
                       {"size", entry.size},
                       {"files", entry.files}});
  }
  nlohmann::json json{{"format", k_index_format},
                      {"next_sequence", index.next_sequence},
                      {"entries", std::move(entries)}};
  fs::path path = root / "index.json";
  fs::path temporary = root / fmt::format("index.json.{}", ::getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json.dump(2) << '\n';
    if (!out.flush()) {
      return fail(ErrorCode::io_error, "cannot write {}", temporary.string());
    }
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);  // readers see the old or the new index, never half
  if (ec) return fail(ErrorCode::io_error, "cannot write {}: {}", path.string(), ec.message());
  return {};
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string text;
  for (const auto& item : items) {
    if (!text.empty()) text += separator;
    text += item;
  }
  return text;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// The path patterns with `~` expanded; `!` prefixes kept.
std::vector<std::string> expand_patterns(const std::vector<std::string>& paths,
                                         const ActionContext& context) {
  std::vector<std::string> expanded;
  for (const auto& pattern : paths) {
    std::size_t bangs = pattern.find_first_not_of('!');
    if (bangs == std::string::npos) bangs = pattern.size();
    expanded.push_back(pattern.substr(0, bangs) + expand_home(pattern.substr(bangs), context));
  }
  return expanded;
}

fs::path workspace_of(const ActionContext& context) {
  return absolute_under(fs::current_path(), context.workspace.string());
}

// Saves `paths` under `key`; store problems are warnings, as on GitHub.
Result<ActionResult> save_cache(const std::string& key, const std::vector<std::string>& paths,
                                const ActionContext& context) {
  KILN_TRY_VOID(validate_cache_keys({key}));
  ActionResult result;
  fs::path workspace = workspace_of(context);
  KILN_TRY(auto search, search_files(expand_patterns(paths, context), workspace));
  if (search.files.empty()) {
    log_warning(context,
                "Path Validation Error: Path(s) specified in the action for caching do(es) not "
                "exist, hence no cache is being saved.");
    return result;
  }
  auto fill = [&](const fs::path& into) -> Result<CopyStats> {
    CopyStats stats;
    for (const auto& file : search.files) {
      if (context.run_as) KILN_TRY_VOID(core::check_readable_by(file, *context.run_as));
      fs::path target = is_within(file, workspace)
                            ? into / "workspace" / file.lexically_relative(workspace)
                            : into / "absolute" / file.relative_path();
      KILN_TRY(auto bytes, copy_one_file(file, target));
      ++stats.files;
      stats.bytes += bytes;
    }
    return stats;
  };
  CacheStore store(context.cache_root);
  auto saved = store.save(key, cache_version(paths), fill);
  if (!saved) {
    log_warning(context, fmt::format("Failed to save cache '{}': {}", key, saved.error().message));
  } else if (*saved == CacheStore::SaveOutcome::already_exists) {
    log_warning(context, fmt::format("Failed to save: a cache entry with key '{}' already exists "
                                     "(entries never change: use a new key to store new content)",
                                     key));
  } else {
    log_line(context,
             fmt::format("Cache saved with key: {} ({} file(s))", key, search.files.size()));
  }
  return result;
}

Result<CopyStats> restore_entry(const CacheStore& store, const CacheEntry& entry,
                                const fs::path& workspace, const core::RunAs* run_as) {
  CopyStats total;
  fs::path content = store.content_path(entry);
  std::error_code ec;
  if (fs::exists(content / "workspace", ec)) {
    KILN_TRY(auto stats, copy_tree(content / "workspace", workspace));
    total.files += stats.files;
    total.bytes += stats.bytes;
  }
  if (fs::exists(content / "absolute", ec)) {
    // Saved from outside the workspace: restored where it was, but under jobs.user only where
    // that user could write it itself (kiln, as root, could write anywhere).
    if (run_as)
      for (fs::recursive_directory_iterator it(content / "absolute", ec), end; !ec && it != end;
           it.increment(ec))
        if (!it->is_directory())
          KILN_TRY_VOID(core::check_writable_by(
              fs::path("/") / it->path().lexically_relative(content / "absolute"), *run_as));
    KILN_TRY(auto stats, copy_tree(content / "absolute", "/"));
    total.files += stats.files;
    total.bytes += stats.bytes;
  }
  return total;
}

}  // namespace

Result<std::vector<CacheEntry>> CacheStore::entries() const {
  KILN_TRY(auto lock, IndexLock::acquire(root_, false));
  KILN_TRY(auto index, read_index(root_));
  return index.entries;
}

Result<std::optional<CacheEntry>> CacheStore::find(const std::vector<std::string>& keys,
                                                   std::string_view version) const {
  KILN_TRY(auto all, entries());
  for (const auto& key : keys) {
    const CacheEntry* newest_prefix = nullptr;
    for (const auto& entry : all) {
      if (entry.version != version) continue;
      if (entry.key == key) return std::optional<CacheEntry>(entry);
      if (entry.key.starts_with(key) &&
          (newest_prefix == nullptr || entry.sequence > newest_prefix->sequence)) {
        newest_prefix = &entry;
      }
    }
    if (newest_prefix != nullptr) return std::optional<CacheEntry>(*newest_prefix);
  }
  return std::optional<CacheEntry>();
}

fs::path CacheStore::content_path(const CacheEntry& entry) const {
  return root_ / "entries" / entry.directory;
}

Result<CacheStore::SaveOutcome> CacheStore::save(
    std::string_view key, std::string_view version,
    const std::function<Result<CopyStats>(const fs::path&)>& fill) {
  auto exists = [&](const Index& index) {
    return std::any_of(index.entries.begin(), index.entries.end(),
                       [&](const CacheEntry& e) { return e.key == key && e.version == version; });
  };
  {
    KILN_TRY(auto lock, IndexLock::acquire(root_, false));
    KILN_TRY(auto index, read_index(root_));
    if (exists(index)) return SaveOutcome::already_exists;
  }

  // Copy outside the lock (it may take long), into a directory no other save can pick.
  static std::atomic<unsigned> counter{0};
  CacheEntry entry;
  entry.key = std::string(key);
  entry.version = std::string(version);
  entry.created_ms = now_ms();
  entry.directory = fmt::format("{}-{}-{}-{}", stable_hash_hex(fmt::format("{}\n{}", key, version)),
                                entry.created_ms, ::getpid(), counter++);
  fs::path directory = root_ / "entries" / entry.directory;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) {
    return fail(ErrorCode::io_error, "cannot create {}: {}", directory.string(), ec.message());
  }
  auto filled = fill(directory);
  if (!filled) {
    fs::remove_all(directory, ec);
    return std::unexpected(filled.error());
  }
  entry.files = filled->files;
  entry.size = filled->bytes;

  KILN_TRY(auto lock, IndexLock::acquire(root_, true));
  KILN_TRY(auto index, read_index(root_));
  if (exists(index)) {  // another job saved the same key while we copied
    fs::remove_all(directory, ec);
    return SaveOutcome::already_exists;
  }
  entry.sequence = index.next_sequence++;
  index.entries.push_back(entry);
  auto written = write_index(root_, index);
  if (!written) {
    fs::remove_all(directory, ec);
    return std::unexpected(written.error());
  }
  return SaveOutcome::saved;
}

std::string cache_version(const std::vector<std::string>& paths) {
  return stable_hash_hex(join(paths, "\n") + "\nkiln-directory-1");
}

namespace {

// Keys are stored in the JSON index, which holds UTF-8 only.
bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t length = byte < 0x80                    ? 1
                               : byte >= 0xC2 && byte <= 0xDF ? 2
                               : byte >= 0xE0 && byte <= 0xEF ? 3
                               : byte >= 0xF0 && byte <= 0xF4 ? 4
                                                              : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    const auto second = static_cast<unsigned char>(length > 1 ? text[i + 1] : 0);
    if ((byte == 0xE0 && second < 0xA0) || (byte == 0xED && second > 0x9F) ||
        (byte == 0xF0 && second < 0x90) || (byte == 0xF4 && second > 0x8F))
      return false;  // overlong, a surrogate, or beyond U+10FFFF
    i += length;
  }
  return true;
}

}  // namespace

Status validate_cache_keys(const std::vector<std::string>& keys) {
  if (keys.size() > k_max_keys) {
    return fail(ErrorCode::invalid_input,
                "Key Validation Error: keys are limited to a maximum of {} (key and "
                "restore-keys together), got {}",
                k_max_keys, keys.size());
  }
  for (const auto& key : keys) {
    if (key.size() > k_max_key_length) {
      return fail(ErrorCode::invalid_input,
                  "Key Validation Error: {} cannot be larger than {} characters.", key,
                  k_max_key_length);
    }
    if (key.find(',') != std::string::npos) {
      return fail(ErrorCode::invalid_input, "Key Validation Error: {} cannot contain commas.", key);
    }
    if (!is_utf8(key))
      return fail(ErrorCode::invalid_input, "Key Validation Error: the key is not valid UTF-8.");
  }
  return {};
}

Result<ActionResult> run_cache(CacheAction action, std::string_view uses,
                               const std::map<std::string, std::string>& with,
                               const ActionContext& context) {
  std::string_view name = action == CacheAction::cache     ? "actions/cache"
                          : action == CacheAction::restore ? "actions/cache/restore"
                                                           : "actions/cache/save";
  auto inputs =
      action == CacheAction::cache
          ? ActionInputs(
                with, {"path", "key", "restore-keys", "upload-chunk-size", "enableCrossOsArchive",
                       "fail-on-cache-miss", "lookup-only", "save-always"})
      : action == CacheAction::restore
          ? ActionInputs(with, {"path", "key", "restore-keys", "enableCrossOsArchive",
                                "fail-on-cache-miss", "lookup-only"})
          : ActionInputs(with, {"path", "key", "upload-chunk-size", "enableCrossOsArchive"});
  warn_unexpected_inputs(inputs, name, context);

  auto paths = inputs.get_lines("path");
  if (paths.empty()) return fail(ErrorCode::invalid_input, "Input required and not supplied: path");
  std::string key = inputs.get("key");
  if (key.empty()) return fail(ErrorCode::invalid_input, "Input required and not supplied: key");
  if (action == CacheAction::save) return save_cache(key, paths, context);

  KILN_TRY(bool fail_on_miss, inputs.get_bool("fail-on-cache-miss", false));
  KILN_TRY(bool lookup_only, inputs.get_bool("lookup-only", false));
  bool save_always = false;
  if (action == CacheAction::cache) {
    KILN_TRY(save_always, inputs.get_bool("save-always", false));
    if (save_always) {
      log_warning(context,
                  "input 'save-always' is deprecated upstream; the cache is saved even "
                  "when the job fails");
    }
  }
  std::vector<std::string> keys{key};
  for (auto& restore_key : inputs.get_lines("restore-keys")) keys.push_back(restore_key);
  KILN_TRY_VOID(validate_cache_keys(keys));

  ActionResult result;
  if (action == CacheAction::restore) result.outputs.emplace_back("cache-primary-key", key);
  PostAction post{.uses = std::string(uses),
                  .description = fmt::format("Save cache '{}'", key),
                  .state = {{"key", key}, {"path", join(paths, "\n")}},
                  .always = save_always};

  CacheStore store(context.cache_root);
  auto found = store.find(keys, cache_version(paths));
  if (!found) {
    log_warning(context, fmt::format("Failed to restore: {}", found.error().message));
    found = std::optional<CacheEntry>();
  }
  if (!found->has_value()) {
    if (fail_on_miss) {
      return fail(ErrorCode::not_found,
                  "Failed to restore cache entry. Exiting as fail-on-cache-miss is set. Input "
                  "key: {}",
                  key);
    }
    log_line(context, fmt::format("Cache not found for input keys: {}", join(keys, ", ")));
    if (action == CacheAction::cache) result.post = std::move(post);
    return result;
  }

  const CacheEntry& entry = **found;
  bool exact = entry.key == key;
  if (lookup_only) {
    log_line(context, fmt::format("Cache found and can be restored from key: {}", entry.key));
  } else {
    auto restored = restore_entry(store, entry, workspace_of(context), context.run_as);
    if (!restored) {
      // A damaged entry is a miss, like a failed download on GitHub.
      log_warning(context, fmt::format("Failed to restore: {}", restored.error().message));
      if (fail_on_miss) {
        return fail(ErrorCode::not_found,
                    "Failed to restore cache entry. Exiting as fail-on-cache-miss is set. "
                    "Input key: {}",
                    key);
      }
      if (action == CacheAction::cache) result.post = std::move(post);
      return result;
    }
    log_line(context, fmt::format("Cache restored from key: {} ({} file(s), {} bytes)", entry.key,
                                  restored->files, restored->bytes));
  }
  result.outputs.emplace_back("cache-hit", exact ? "true" : "false");
  if (action == CacheAction::restore) result.outputs.emplace_back("cache-matched-key", entry.key);
  // An exact hit is not saved again (entries never change).
  if (action == CacheAction::cache && !exact) result.post = std::move(post);
  return result;
}

Result<ActionResult> run_cache_post(const PostAction& post, const ActionContext& context) {
  auto key = post.state.find("key");
  auto path = post.state.find("path");
  if (key == post.state.end() || path == post.state.end()) {
    return fail(ErrorCode::internal, "the cache post step has no key or path to save");
  }
  return save_cache(key->second, split_lines(path->second), context);
}

}  // namespace kiln::exec
