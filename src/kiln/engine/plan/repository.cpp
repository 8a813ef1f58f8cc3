#include "kiln/engine/plan/repository.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/core/git.h"
#include "kiln/core/subprocess.h"

namespace kiln::engine {
namespace {

constexpr std::string_view k_zero_sha = "0000000000000000000000000000000000000000";

Result<std::string> git(const std::filesystem::path& cwd, std::vector<std::string> args) {
  args.insert(args.begin(), "git");
  KILN_TRY(auto out, core::run_command(args, cwd, core::git_environment()));
  if (!out.ok()) {
    std::string err = out.err.empty() ? out.out : out.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    return make_error(ErrorCode::invalid_input,
                      fmt::format("git {} failed in {}: {}", args.at(1), cwd.string(), err));
  }
  return out.out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string repository_name(const std::filesystem::path& root, const std::string& origin_url) {
  // git@host:owner/repo.git, https://host/owner/repo(.git), /path/to/repo
  std::string url = origin_url;
  while (!url.empty() && (url.back() == '/' || url.back() == '\n')) url.pop_back();
  if (url.ends_with(".git")) url.resize(url.size() - 4);
  auto cut = url.find_last_of("/:");
  if (cut != std::string::npos && cut > 0) {
    auto owner_cut = url.find_last_of("/:", cut - 1);
    std::string owner = url.substr(owner_cut == std::string::npos ? 0 : owner_cut + 1,
                                   cut - (owner_cut == std::string::npos ? 0 : owner_cut + 1));
    std::string repo = url.substr(cut + 1);
    if (!owner.empty() && !repo.empty()) return owner + "/" + repo;
  }
  // The directory's own name, however the root was spelled ("." or "repo/").
  auto absolute = std::filesystem::absolute(root).lexically_normal();
  if (!absolute.has_filename()) absolute = absolute.parent_path();
  return "local/" + absolute.filename().string();
}

// remote.origin.url from .git/config, without a git process; "" when absent or when .git is
// not a directory (a worktree or submodule: then git is asked).
std::string read_origin_url(const std::filesystem::path& root) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root / ".git", ec)) {
    auto url = git(root, {"config", "--get", "remote.origin.url"});
    return url ? lines_of(*url).empty() ? "" : lines_of(*url)[0] : "";
  }
  std::ifstream in(root / ".git" / "config");
  bool in_origin = false;
  for (std::string line; std::getline(in, line);) {
    auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    std::string_view text = std::string_view(line).substr(start);
    if (text.starts_with("[")) {
      in_origin = text.starts_with("[remote \"origin\"]");
      continue;
    }
    if (in_origin && text.starts_with("url")) {
      auto eq = text.find('=');
      if (eq == std::string_view::npos) continue;
      auto value = text.substr(eq + 1);
      auto first = value.find_first_not_of(" \t");
      return first == std::string_view::npos ? "" : std::string(value.substr(first));
    }
  }
  return "";
}

Result<nlohmann::json> read_event_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(ErrorCode::invalid_input, "cannot read the event file", {path.string()});
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_event_file(text, path.string());
}

std::string string_at(const nlohmann::json& object, const nlohmann::json::json_pointer& ptr,
                      std::string fallback) {
  if (object.contains(ptr) && object.at(ptr).is_string()) return object.at(ptr).get<std::string>();
  return fallback;
}

}  // namespace

std::optional<std::filesystem::path> find_work_tree(const std::filesystem::path& path) {
  std::error_code ec;
  auto dir = std::filesystem::absolute(path, ec).lexically_normal();
  if (ec) return std::nullopt;
  while (true) {
    if (std::filesystem::exists(dir / ".git", ec)) return dir;
    if (!dir.has_relative_path()) return std::nullopt;
    auto parent = dir.parent_path();
    if (parent == dir) return std::nullopt;
    dir = parent;
  }
}

Result<std::string> snapshot_work_tree(const RepositoryInfo& repo) {
  KILN_TRY(auto status, git(repo.root, {"status", "--porcelain", "--untracked-files=normal"}));
  if (status.empty() || repo.head_sha.empty()) return std::string{};
  auto index = std::filesystem::temp_directory_path() /
               fmt::format("kiln-index-{}-{}", ::getpid(), repo.head_sha.substr(0, 12));
  auto env = core::current_environment();
  env["GIT_INDEX_FILE"] = index.string();
  auto run = [&](std::vector<std::string> args) -> Result<std::string> {
    args.insert(args.begin(), "git");
    KILN_TRY(auto out, core::run_command(args, repo.root, env));
    if (!out.ok())
      return make_error(ErrorCode::io_error, fmt::format("git {} failed in {}: {}", args.at(1),
                                                         repo.root.string(), out.err));
    return out.out;
  };
  auto snapshot = [&]() -> Result<std::string> {
    KILN_TRY_VOID(run({"read-tree", "HEAD"}));
    KILN_TRY_VOID(run({"add", "--all", "."}));
    KILN_TRY(auto tree, run({"write-tree"}));
    KILN_TRY(auto commit, run({"-c", "user.name=kiln", "-c", "user.email=kiln@localhost",
                               "commit-tree", lines_of(tree).at(0), "-p", repo.head_sha, "-m",
                               "kiln: the work tree's uncommitted changes"}));
    return lines_of(commit).at(0);
  };
  auto result = snapshot();
  std::error_code ec;
  std::filesystem::remove(index, ec);
  return result;
}

Result<RepositoryInfo> inspect_repository(const std::filesystem::path& path) {
  RepositoryInfo info;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec))
    return make_error(ErrorCode::invalid_input, "no such directory", {path.string()});
  // The top level is found by looking for .git upwards; everything about HEAD comes from one
  // git process (each git process costs milliseconds: docs/performance.md).
  auto root = find_work_tree(path);
  if (!root)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{} is not inside a git repository (kiln runs the workflows of "
                                  "a git repository: git init, then commit)",
                                  path.string()));
  info.root = *root;
  // --name-only adds the files HEAD changed against its first parent (all of them for a root
  // commit): the changed files of a push of HEAD, without another git process.
  auto meta = git(info.root, {"log", "-1", "--no-renames", "--diff-merges=first-parent",
                              "--name-only", "--format=%H%n%P%n%an%n%ae%n%D%n%s", "HEAD"});
  if (!meta)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{} has no commit yet (kiln runs the workflows of a commit: "
                                  "commit first)",
                                  info.root.string()));
  std::vector<std::string> fields;
  {
    std::istringstream in(*meta);
    for (std::string line; std::getline(in, line);) fields.push_back(line);
  }
  for (size_t i = 6; i < fields.size(); ++i)
    if (!fields[i].empty()) info.head_changed_files.push_back(fields[i]);
  fields.resize(6);
  info.head_sha = fields[0];
  info.parent_sha = fields[1].substr(0, fields[1].find(' '));
  info.author_name = fields[2];
  info.author_email = fields[3];
  // %D: "HEAD -> main, origin/main, tag: v1" on a branch; no "HEAD -> " when detached.
  constexpr std::string_view head_arrow = "HEAD -> ";
  if (auto at = fields[4].find(head_arrow); at != std::string::npos) {
    auto branch = fields[4].substr(at + head_arrow.size());
    info.head_ref = "refs/heads/" + branch.substr(0, branch.find(','));
  }
  info.subject = fields[5];

  std::string origin_url = read_origin_url(info.root);
  info.name = repository_name(info.root, origin_url);
  auto branch_exists = [&](const std::string& name) {
    return std::filesystem::exists(info.root / ".git" / "refs" / "heads" / name, ec) ||
           info.head_ref == "refs/heads/" + name;
  };
  auto origin_head = info.root / ".git" / "refs" / "remotes" / "origin" / "HEAD";
  if (std::ifstream in(origin_head); in) {
    std::string line;
    std::getline(in, line);
    constexpr std::string_view prefix = "ref: refs/remotes/origin/";
    if (line.starts_with(prefix)) info.default_branch = line.substr(prefix.size());
  }
  if (info.default_branch.empty()) {
    if (branch_exists("main"))
      info.default_branch = "main";
    else if (branch_exists("master"))
      info.default_branch = "master";
    else if (info.head_ref.starts_with("refs/heads/"))
      info.default_branch = info.head_ref.substr(11);
    else
      info.default_branch = "main";
  }
  return info;
}

Result<std::vector<std::string>> changed_files(const RepositoryInfo& repo, const std::string& from,
                                               const std::string& to) {
  std::vector<std::string> args;
  if (from.empty() || from == k_zero_sha)
    args = {"ls-tree", "-r", "--name-only", to};
  else
    args = {"diff", "--name-only", "--no-renames", from, to};
  KILN_TRY(auto out, git(repo.root, args));
  return lines_of(out);
}

Result<nlohmann::json> parse_event_file(std::string_view text, const std::string& file) {
  auto payload = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (payload.is_discarded() || !payload.is_object())
    return make_error(ErrorCode::invalid_input, "the event file is not a JSON object", {file});
  using ptr = nlohmann::json::json_pointer;
  // (member, whether it is an object, else a string); parents before their members, so a
  // parent of the wrong shape is named before its members are looked for.
  const std::pair<const char*, bool> members[] = {{"/repository", true},
                                                  {"/pull_request", true},
                                                  {"/pull_request/head", true},
                                                  {"/pull_request/base", true},
                                                  {"/inputs", true},
                                                  {"/ref", false},
                                                  {"/after", false},
                                                  {"/before", false},
                                                  {"/action", false},
                                                  {"/schedule", false}};
  for (const auto& [member, object] : members) {
    const ptr at(member);
    if (!payload.contains(at) || payload.at(at).is_null()) continue;
    const auto& value = payload.at(at);
    if (object ? value.is_object() : value.is_string()) continue;
    std::string name = std::string(member).substr(1);
    std::ranges::replace(name, '/', '.');
    return make_error(ErrorCode::invalid_input,
                      fmt::format("'{}' must be {}, not {}", name,
                                  object ? "an object" : "a string", value.type_name()),
                      {file});
  }
  return payload;
}

Result<plan::Event> make_event(const RunOptions& options, const RepositoryInfo& repo) {
  plan::Event event;
  event.name = options.event_name;
  nlohmann::json payload = nlohmann::json::object();
  if (options.event_file) {
    KILN_TRY(payload, read_event_file(*options.event_file));
  }
  const std::string branch =
      repo.head_ref.starts_with("refs/heads/") ? repo.head_ref.substr(11) : std::string{};
  nlohmann::json repository = {
      {"name", repo.name.substr(repo.name.find('/') + 1)},
      {"full_name", repo.name},
      {"default_branch", repo.default_branch},
      {"owner", {{"login", repo.name.substr(0, repo.name.find('/'))}}},
  };
  if (!payload.contains("repository")) payload["repository"] = repository;
  using ptr = nlohmann::json::json_pointer;

  if (event.name == "push") {
    event.ref =
        string_at(payload, ptr("/ref"), repo.head_ref.empty() ? "refs/heads/HEAD" : repo.head_ref);
    event.sha = string_at(payload, ptr("/after"), repo.head_sha);
    event.before = string_at(payload, ptr("/before"),
                             repo.parent_sha.empty() ? std::string(k_zero_sha) : repo.parent_sha);
    payload["ref"] = event.ref;
    payload["after"] = event.sha;
    payload["before"] = event.before;
    if (!payload.contains("head_commit"))
      payload["head_commit"] = {
          {"id", event.sha},
          {"message", repo.subject},
          {"author", {{"name", repo.author_name}, {"email", repo.author_email}}}};
    if (event.ref.starts_with("refs/heads/") || event.ref.starts_with("refs/tags/")) {
      if (event.sha == repo.head_sha && (event.before == repo.parent_sha ||
                                         (repo.parent_sha.empty() && event.before == k_zero_sha))) {
        event.changed_files = repo.head_changed_files;
      } else {
        KILN_TRY(event.changed_files, changed_files(repo, event.before, event.sha));
      }
      event.changed_files_known = true;
    }
  } else if (event.name == "pull_request" || event.name == "pull_request_target") {
    event.base_ref = string_at(payload, ptr("/pull_request/base/ref"), repo.default_branch);
    event.head_ref =
        string_at(payload, ptr("/pull_request/head/ref"), branch.empty() ? "HEAD" : branch);
    event.sha = string_at(payload, ptr("/pull_request/head/sha"), repo.head_sha);
    int number = payload.contains(ptr("/pull_request/number")) &&
                         payload.at(ptr("/pull_request/number")).is_number_integer()
                     ? payload.at(ptr("/pull_request/number")).get<int>()
                     : 1;
    event.ref = fmt::format("refs/pull/{}/merge", number);
    // The activity: --event-file's `action`, else `synchronize` (an update of the pull
    // request, what GitHub sends for a push to its branch); on.<event>.types match it.
    event.action = string_at(payload, ptr("/action"), "synchronize");
    payload["action"] = event.action;
    if (!payload.contains("number")) payload["number"] = number;
    auto& pr = payload["pull_request"];
    if (!pr.contains("number")) pr["number"] = number;
    if (!pr.contains("head")) pr["head"] = {{"ref", event.head_ref}, {"sha", event.sha}};
    if (!pr.contains("base")) pr["base"] = {{"ref", event.base_ref}};
    if (!pr.contains("title")) pr["title"] = repo.subject;
    // Changed files of a pull request: from the merge base with the base branch.
    auto base = git(repo.root, {"merge-base", event.base_ref, event.sha});
    if (base) {
      std::string merge_base = lines_of(*base).empty() ? "" : lines_of(*base)[0];
      if (!pr["base"].contains("sha")) pr["base"]["sha"] = merge_base;
      KILN_TRY(event.changed_files, changed_files(repo, merge_base, event.sha));
      event.changed_files_known = true;
    }
  } else if (event.name == "workflow_dispatch") {
    event.ref =
        string_at(payload, ptr("/ref"), repo.head_ref.empty() ? "refs/heads/HEAD" : repo.head_ref);
    event.sha = repo.head_sha;
    payload["ref"] = event.ref;
    if (!payload.contains("inputs")) payload["inputs"] = nlohmann::json::object();
    for (auto& [key, value] : payload["inputs"].items())
      if (value.is_string() && !options.inputs.contains(key))
        event.inputs[key] = value.get<std::string>();
    for (auto& [key, value] : options.inputs) {
      event.inputs[key] = value;
      payload["inputs"][key] = value;
    }
  } else if (event.name == "schedule") {
    // `kiln serve`'s clock names the default branch it read (schedule_clock.h).
    event.ref = string_at(payload, ptr("/ref"), "refs/heads/" + repo.default_branch);
    event.sha = repo.head_sha;
    if (!payload.contains("schedule")) payload["schedule"] = "";
  } else if (event.name == "image_version") {
    // A new version of a custom runner image: runs on the default branch, as GitHub does.
    event.ref = "refs/heads/" + repo.default_branch;
    event.sha = repo.head_sha;
  } else {
    return make_error(
        ErrorCode::invalid_input,
        fmt::format("unsupported event '{}' (expected push, pull_request, "
                    "pull_request_target, workflow_dispatch, schedule or image_version)",
                    event.name));
  }
  event.payload = std::move(payload);
  return event;
}

}  // namespace kiln::engine
