#include "kiln/exec/artifact.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <system_error>

#include "kiln/exec/actions_support.h"
#include "kiln/exec/artifact_glob.h"

namespace kiln::exec {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_upload = "actions/upload-artifact";
constexpr std::string_view k_download = "actions/download-artifact";
constexpr int k_max_retention_days = 90;

// A staging directory beside the artifacts, removed unless it was committed (renamed away).
// Its name holds ':', which no artifact name may, so listings never mistake it for one.
class StagingDirectory {
 public:
  explicit StagingDirectory(fs::path path) : path_(std::move(path)) {}
  StagingDirectory(const StagingDirectory&) = delete;
  StagingDirectory& operator=(const StagingDirectory&) = delete;
  ~StagingDirectory() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

fs::path staging_path(const fs::path& root, std::string_view name) {
  static std::atomic<unsigned> counter{0};
  return root / fmt::format("staging:{}:{}:{}", name, ::getpid(), counter++);
}

// Where the uploaded files are laid out from, as upload-artifact decides it.
fs::path artifact_root_directory(const PathSearchResult& search) {
  if (search.search_paths.size() > 1) return least_common_ancestor(search.search_paths);
  if (search.files.size() == 1 && search.search_paths.front() == search.files.front()) {
    return search.files.front().parent_path();
  }
  return search.search_paths.front();
}

std::string join_names(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) {
    if (!text.empty()) text += ", ";
    text += name;
  }
  return text.empty() ? "none" : text;
}

}  // namespace

Status validate_artifact_name(std::string_view name) {
  if (name.empty()) return fail(ErrorCode::invalid_input, "the artifact name is empty");
  if (name == "." || name == "..") {
    return fail(ErrorCode::invalid_input, "'{}' is not a valid artifact name", name);
  }
  constexpr std::string_view k_forbidden = "\":<>|*?\\/\r\n";
  auto bad = name.find_first_of(k_forbidden);
  if (bad != std::string_view::npos) {
    char c = name[bad];
    std::string shown = c == '\r'   ? "carriage return"
                        : c == '\n' ? "line feed"
                                    : fmt::format("'{}'", c);
    return fail(ErrorCode::invalid_input,
                "the artifact name '{}' contains {}; names may not contain \" : < > | * ? \\ / "
                "or line breaks",
                name, shown);
  }
  return {};
}

std::string artifact_id(std::string_view name) {
  // 53 bits: an exact integer in JavaScript, like GitHub's ids.
  return fmt::format("{}", stable_hash(name) & ((std::uint64_t{1} << 53) - 1));
}

std::vector<std::string> list_artifacts(const fs::path& artifact_root) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::directory_iterator(artifact_root, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (it->is_directory(ec) && validate_artifact_name(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<ActionResult> run_upload_artifact(const std::map<std::string, std::string>& with,
                                         const ActionContext& context) {
  ActionInputs inputs(with, {"name", "path", "if-no-files-found", "retention-days",
                             "compression-level", "overwrite", "include-hidden-files"});
  warn_unexpected_inputs(inputs, k_upload, context);

  std::string name = inputs.get("name", "artifact");
  KILN_TRY_VOID(validate_artifact_name(name));
  auto patterns = inputs.get_lines("path");
  if (patterns.empty()) {
    return fail(ErrorCode::invalid_input, "Input required and not supplied: path");
  }
  std::string if_none = inputs.get("if-no-files-found", "warn");
  if (if_none != "warn" && if_none != "error" && if_none != "ignore") {
    return fail(ErrorCode::invalid_input,
                "input 'if-no-files-found' is '{}'; it must be warn, error or ignore", if_none);
  }
  KILN_TRY(std::int64_t retention, inputs.get_int("retention-days", 0));
  if (retention < 0) {
    return fail(ErrorCode::invalid_input, "input 'retention-days' must be 1 or more, got {}",
                retention);
  }
  if (retention > k_max_retention_days) {
    log_warning(context, fmt::format("retention-days {} is more than the maximum {}; using {}",
                                     retention, k_max_retention_days, k_max_retention_days));
    retention = k_max_retention_days;
  }
  KILN_TRY(std::int64_t level, inputs.get_int("compression-level", 6));
  if (level < 0 || level > 9) {
    return fail(ErrorCode::invalid_input,
                "input 'compression-level' must be between 0 and 9, got {}", level);
  }
  KILN_TRY(bool overwrite, inputs.get_bool("overwrite", false));
  KILN_TRY(bool include_hidden, inputs.get_bool("include-hidden-files", false));

  std::vector<std::string> expanded;
  for (const auto& pattern : patterns) {
    std::size_t bangs = pattern.find_first_not_of('!');
    if (bangs == std::string::npos) bangs = pattern.size();
    expanded.push_back(pattern.substr(0, bangs) + expand_home(pattern.substr(bangs), context));
  }
  fs::path workspace = absolute_under(fs::current_path(), context.workspace.string());
  KILN_TRY(auto search, search_files(expanded, workspace, {.include_hidden = include_hidden}));

  ActionResult result;
  if (search.files.empty()) {
    std::string message = fmt::format(
        "No files were found with the provided path: {}. No artifacts will be uploaded.",
        join_names(patterns));
    if (if_none == "error") return fail(ErrorCode::invalid_input, "{}", message);
    if (if_none == "warn") {
      log_warning(context, message);
    } else {
      log_line(context, message);
    }
    return result;
  }

  fs::path layout_root = artifact_root_directory(search);
  std::error_code ec;
  fs::create_directories(context.artifact_root, ec);
  if (ec) {
    return fail(ErrorCode::io_error, "cannot create {}: {}", context.artifact_root.string(),
                ec.message());
  }
  StagingDirectory staging(staging_path(context.artifact_root, name));
  ArtifactInfo info{.name = name, .path = context.artifact_root / name};
  for (const auto& file : search.files) {
    if (context.run_as) KILN_TRY_VOID(core::check_readable_by(file, *context.run_as));
    fs::path target = staging.path() / file.lexically_relative(layout_root);
    fs::create_directories(target.parent_path(), ec);
    // Links are followed: the artifact holds what the link points to, like the real zip.
    if (!ec) fs::copy_file(file, target, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return fail(ErrorCode::io_error, "cannot store {} in artifact '{}': {}", file.string(), name,
                  ec.message());
    }
    info.size += fs::file_size(target, ec);
    ++info.files;
  }

  bool exists = fs::exists(info.path, ec);
  if (exists && !overwrite) {
    return fail(ErrorCode::invalid_input,
                "an artifact named '{}' already exists in this run; give another name, or set "
                "'overwrite: true' to replace it",
                name);
  }
  if (exists) {
    fs::remove_all(info.path, ec);
    if (ec) {
      return fail(ErrorCode::io_error, "cannot delete the previous artifact '{}': {}", name,
                  ec.message());
    }
    log_line(context, fmt::format("Deleted the previous artifact '{}' (overwrite: true)", name));
  }
  // rename() does not replace a non-empty directory: a job that uploads the same name at the
  // same moment loses the race instead of mixing files.
  fs::rename(staging.path(), info.path, ec);
  if (ec) {
    if (fs::exists(info.path)) {
      return fail(ErrorCode::invalid_input,
                  "an artifact named '{}' already exists in this run (uploaded at the same "
                  "time by another step)",
                  name);
    }
    return fail(ErrorCode::io_error, "cannot store artifact '{}': {}", name, ec.message());
  }
  info.retention_days = static_cast<int>(retention);
  log_line(context, fmt::format("Uploaded artifact '{}': {} file(s), {} bytes, from {}", name,
                                info.files, info.size, layout_root.string()));
  result.outputs = {{"artifact-id", artifact_id(name)},
                    {"artifact-url", "file://" + info.path.string()}};
  result.artifacts_uploaded.push_back(std::move(info));
  return result;
}

Result<ActionResult> run_download_artifact(const std::map<std::string, std::string>& with,
                                           const ActionContext& context) {
  ActionInputs inputs(with, {"name", "path", "pattern", "merge-multiple", "github-token",
                             "repository", "run-id", "artifact-ids"});
  warn_unexpected_inputs(inputs, k_download, context);

  auto env_value = [&](const char* key) {
    auto it = context.env.find(key);
    return it == context.env.end() ? std::string() : it->second;
  };
  if (inputs.has("run-id") && inputs.get("run-id") != env_value("GITHUB_RUN_ID")) {
    return fail(ErrorCode::unsupported,
                "cannot download artifacts of run '{}': kiln keeps artifacts per run, and this "
                "step can read only its own run's",
                inputs.get("run-id"));
  }
  if (inputs.has("repository") && inputs.get("repository") != env_value("GITHUB_REPOSITORY")) {
    return fail(ErrorCode::unsupported,
                "cannot download artifacts of repository '{}': kiln has no network",
                inputs.get("repository"));
  }
  KILN_TRY(bool merge, inputs.get_bool("merge-multiple", false));
  std::string name = inputs.get("name");
  std::string ids_text = inputs.get("artifact-ids");
  if (!name.empty() && !ids_text.empty()) {
    return fail(ErrorCode::invalid_input,
                "inputs 'name' and 'artifact-ids' cannot be used together");
  }

  fs::path workspace = absolute_under(fs::current_path(), context.workspace.string());
  fs::path destination = absolute_under(workspace, expand_home(inputs.get("path"), context));
  auto available = list_artifacts(context.artifact_root);

  ActionResult result;
  result.outputs = {{"download-path", destination.string()}};
  if (!name.empty()) {
    bool found = validate_artifact_name(name).has_value() &&
                 std::find(available.begin(), available.end(), name) != available.end();
    if (!found) {
      return fail(ErrorCode::not_found,
                  "Unable to download artifact(s): Artifact not found for name: {} (artifacts "
                  "in this run: {})",
                  name, join_names(available));
    }
    KILN_TRY(auto stats, copy_tree(context.artifact_root / name, destination));
    log_line(context, fmt::format("Downloaded artifact '{}' ({} file(s), {} bytes) to {}", name,
                                  stats.files, stats.bytes, destination.string()));
    return result;
  }

  std::vector<std::string> wanted_ids;
  for (std::size_t start = 0; start < ids_text.size();) {
    auto comma = ids_text.find(',', start);
    if (comma == std::string::npos) comma = ids_text.size();
    std::string id = ids_text.substr(start, comma - start);
    id.erase(0, id.find_first_not_of(" \t"));
    id.erase(id.find_last_not_of(" \t") + 1);
    if (!id.empty()) wanted_ids.push_back(id);
    start = comma + 1;
  }
  std::string pattern = inputs.get("pattern");
  std::vector<std::string> selected;
  for (const auto& artifact : available) {
    if (!pattern.empty() && !match_path_pattern(pattern, artifact)) continue;
    if (!wanted_ids.empty() && std::find(wanted_ids.begin(), wanted_ids.end(),
                                         artifact_id(artifact)) == wanted_ids.end()) {
      continue;
    }
    selected.push_back(artifact);
  }
  if (!wanted_ids.empty() && selected.empty()) {
    return fail(ErrorCode::not_found,
                "Unable to download artifact(s): none of the artifact ids {} is in this run",
                ids_text);
  }
  log_line(context, fmt::format("Found {} artifact(s){}", selected.size(),
                                pattern.empty() ? "" : fmt::format(" matching '{}'", pattern)));
  for (const auto& artifact : selected) {
    fs::path target = merge ? destination : destination / artifact;
    KILN_TRY(auto stats, copy_tree(context.artifact_root / artifact, target));
    log_line(context, fmt::format("Downloaded artifact '{}' ({} file(s), {} bytes) to {}", artifact,
                                  stats.files, stats.bytes, target.string()));
  }
  return result;
}

}  // namespace kiln::exec
