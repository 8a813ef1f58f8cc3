#include "kiln/exec/checkout.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "kiln/exec/actions_support.h"

namespace kiln::exec {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_action = "actions/checkout";

// What the checkout ends on: a branch (checked out as a local branch, like the real action),
// a tag or another ref (detached), or a bare commit (detached).
struct Target {
  enum class Kind { branch, tag, other_ref, commit };
  Kind kind = Kind::commit;
  std::string name;  // branch or tag name; the full ref for other_ref
  std::string sha;

  std::string qualified_ref() const {
    switch (kind) {
      case Kind::branch:
        return "refs/heads/" + name;
      case Kind::tag:
        return "refs/tags/" + name;
      case Kind::other_ref:
        return name;
      case Kind::commit:
        return sha;
    }
    return sha;
  }
  // Where the fetched commit is recorded in the checkout.
  std::string local_ref() const {
    switch (kind) {
      case Kind::branch:
        return "refs/remotes/origin/" + name;
      case Kind::tag:
        return "refs/tags/" + name;
      case Kind::other_ref:
        // refs/pull/1/merge -> refs/remotes/pull/1/merge, as the real action stores it.
        return "refs/remotes/" + name.substr(std::string_view("refs/").size());
      case Kind::commit:
        return {};
    }
    return {};
  }
};

Target target_for_ref(std::string_view ref, std::string sha) {
  Target target;
  target.sha = std::move(sha);
  if (ref.starts_with("refs/heads/")) {
    target.kind = Target::Kind::branch;
    target.name = ref.substr(11);
  } else if (ref.starts_with("refs/tags/")) {
    target.kind = Target::Kind::tag;
    target.name = ref.substr(10);
  } else if (ref.starts_with("refs/")) {
    target.kind = Target::Kind::other_ref;
    target.name = ref;
  }
  return target;
}

bool looks_like_sha(std::string_view text) {
  return (text.size() == 40 || text.size() == 64) &&
         std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string first_line(std::string_view text) {
  auto newline = text.find('\n');
  return std::string(text.substr(0, newline));
}

// The commit `revision` names in the source repository, or nullopt.
Result<std::optional<std::string>> resolve_commit(const fs::path& repository,
                                                  const std::string& revision) {
  KILN_TRY(auto output,
           run_git({"rev-parse", "--verify", "--quiet", "--end-of-options", revision + "^{commit}"},
                   repository));
  if (!output.ok()) return std::optional<std::string>();
  return std::optional<std::string>(first_line(output.out));
}

// Resolves the `ref` input the way the real action interprets it: a full ref, a commit sha,
// or a short name that is a branch first and a tag second.
Result<Target> resolve_ref_input(const fs::path& repository, const std::string& ref) {
  if (looks_like_sha(ref)) {
    KILN_TRY(auto sha, resolve_commit(repository, ref));
    if (!sha) {
      return fail(ErrorCode::not_found, "commit '{}' is not in the repository {}", ref,
                  repository.string());
    }
    return Target{Target::Kind::commit, {}, *sha};
  }
  std::vector<std::string> candidates;
  if (ref.starts_with("refs/")) {
    candidates.push_back(ref);
  } else {
    candidates.push_back("refs/heads/" + ref);
    candidates.push_back("refs/tags/" + ref);
  }
  for (const auto& candidate : candidates) {
    KILN_TRY(auto sha, resolve_commit(repository, candidate));
    if (sha) return target_for_ref(candidate, *sha);
  }
  return fail(ErrorCode::not_found, "A branch or tag with the name '{}' could not be found in {}",
              ref, repository.string());
}

Result<Target> resolve_target(const ActionInputs& inputs, const ActionContext& context) {
  if (inputs.has("ref")) return resolve_ref_input(context.repository, inputs.get("ref"));
  std::string sha = context.sha;
  if (sha.empty()) {
    std::string revision = context.ref.empty() ? "HEAD" : context.ref;
    KILN_TRY(auto resolved, resolve_commit(context.repository, revision));
    if (!resolved) {
      return fail(ErrorCode::not_found, "'{}' does not name a commit in {}", revision,
                  context.repository.string());
    }
    sha = *resolved;
  } else {
    KILN_TRY(auto resolved, resolve_commit(context.repository, sha));
    if (!resolved) {
      return fail(ErrorCode::not_found, "commit {} is not in the repository {}", sha,
                  context.repository.string());
    }
    sha = *resolved;
  }
  return target_for_ref(context.ref, sha);
}

// git with its failure turned into a step error that says what was being done.
Result<GitOutput> git_step(const std::vector<std::string>& args, const fs::path& cwd,
                           std::string_view doing) {
  KILN_TRY(auto output, run_git(args, cwd));
  if (!output.ok()) {
    return fail(ErrorCode::invalid_input, "{} failed: {}", doing, output.reason());
  }
  return output;
}

Status git_ok(const std::vector<std::string>& args, const fs::path& cwd, std::string_view doing) {
  KILN_TRY(auto output, git_step(args, cwd, doing));
  (void)output;
  return {};
}

// Makes `dir` an empty repository with origin = url, or keeps the repository that is there
// when its origin is url (cleaning it if asked), like the real action's prepare step.
Status prepare_directory(const fs::path& dir, const std::string& url, bool clean,
                         const ActionContext& context) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(ErrorCode::io_error, "cannot create {}: {}", dir.string(), ec.message());

  bool reuse = false;
  if (fs::exists(dir / ".git", ec)) {
    KILN_TRY(auto origin, run_git({"config", "--local", "--get", "remote.origin.url"}, dir));
    reuse = origin.ok() && first_line(origin.out) == url;
  }
  if (reuse && clean) {
    log_line(context, "Cleaning the repository");
    KILN_TRY(auto cleaned, run_git({"clean", "-ffdx"}, dir));
    if (cleaned.ok()) {
      KILN_TRY(auto reset, run_git({"reset", "--hard", "HEAD"}, dir));
      // An unborn HEAD cannot be reset; anything else means the repository is unusable.
      KILN_TRY(auto head, run_git({"rev-parse", "--verify", "--quiet", "HEAD"}, dir));
      if (!reset.ok() && head.ok()) reuse = false;
    } else {
      reuse = false;
    }
  }
  if (reuse) return {};

  if (!fs::is_empty(dir, ec)) {
    log_line(context, fmt::format("Deleting the contents of '{}'", dir.string()));
    KILN_TRY_VOID(remove_directory_contents(dir));
  }
  KILN_TRY_VOID(git_ok({"-c", "init.defaultBranch=main", "init", "--quiet", "."}, dir, "git init"));
  KILN_TRY_VOID(git_ok({"remote", "add", "origin", url}, dir, "git remote add"));
  KILN_TRY_VOID(git_ok({"config", "--local", "gc.auto", "0"}, dir, "git config"));
  return {};
}

Status fetch(const fs::path& dir, const Target& target, std::int64_t depth, bool fetch_tags) {
  std::vector<std::string> base{"-c",      "protocol.version=2",      "fetch",
                                "--prune", "--no-recurse-submodules", "--quiet"};
  std::string commit_refspec = target.kind == Target::Kind::commit
                                   ? target.sha
                                   : "+" + target.sha + ":" + target.local_ref();
  if (depth <= 0) {
    // All history for all branches and tags, then the commit itself (it may be on no branch,
    // and the branch may have moved past it).
    auto args = base;
    std::error_code ec;
    // A re-used checkout from a shallow fetch must be deepened, or history stays cut.
    if (fs::exists(dir / ".git" / "shallow", ec)) args.push_back("--unshallow");
    args.insert(args.end(), {"--tags", "origin", "+refs/heads/*:refs/remotes/origin/*",
                             "+refs/tags/*:refs/tags/*"});
    KILN_TRY_VOID(git_ok(args, dir, "git fetch"));
    args = base;
    args.insert(args.end(), {"--no-tags", "origin", commit_refspec});
    KILN_TRY_VOID(git_ok(args, dir, "git fetch"));
    return {};
  }
  auto args = base;
  args.push_back("--no-tags");
  args.push_back(fmt::format("--depth={}", depth));
  args.push_back("origin");
  args.push_back(commit_refspec);
  if (fetch_tags) args.push_back("+refs/tags/*:refs/tags/*");
  KILN_TRY_VOID(git_ok(args, dir, "git fetch"));
  return {};
}

Status checkout_target(const fs::path& dir, const Target& target) {
  std::vector<std::string> args{"checkout", "--quiet", "--force"};
  switch (target.kind) {
    case Target::Kind::branch:
      args.insert(args.end(), {"-B", target.name, target.local_ref()});
      break;
    case Target::Kind::tag:
    case Target::Kind::other_ref:
      args.insert(args.end(), {"--detach", target.local_ref()});
      break;
    case Target::Kind::commit:
      args.insert(args.end(), {"--detach", target.sha});
      break;
  }
  KILN_TRY_VOID(git_ok(args, dir, "git checkout"));
  return {};
}

Status update_submodules(const fs::path& dir, bool recursive, std::int64_t depth,
                         const ActionContext& context) {
  std::error_code ec;
  if (!fs::exists(dir / ".gitmodules", ec)) {
    log_warning(context, "input 'submodules' is set but the repository has no submodules");
    return {};
  }
  // Submodule URLs must be reachable without a network: local paths or file:// URLs.
  std::vector<std::string> sync{"-c", "protocol.file.allow=always", "submodule", "sync"};
  std::vector<std::string> update{
      "-c", "protocol.file.allow=always", "submodule", "update", "--init", "--force"};
  if (recursive) {
    sync.push_back("--recursive");
    update.push_back("--recursive");
  }
  if (depth > 0) update.push_back(fmt::format("--depth={}", depth));
  constexpr std::string_view k_hint =
      " (kiln has no network: submodules must be reachable as local paths)";
  KILN_TRY(auto synced, run_git(sync, dir));
  if (!synced.ok()) {
    return fail(ErrorCode::invalid_input, "cannot set up submodules: {}{}", synced.reason(),
                k_hint);
  }
  KILN_TRY(auto updated, run_git(update, dir));
  if (!updated.ok()) {
    return fail(ErrorCode::invalid_input, "cannot check out submodules: {}{}", updated.reason(),
                k_hint);
  }
  return {};
}

bool same_repository_name(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

Result<ActionResult> run_checkout(const std::map<std::string, std::string>& with,
                                  const ActionContext& context) {
  auto home = context.env.find("HOME");
  GitAsUser as_user(context.run_as, home != context.env.end() ? home->second : std::string());
  ActionInputs inputs(with, {"repository",
                             "ref",
                             "token",
                             "ssh-key",
                             "ssh-known-hosts",
                             "ssh-strict",
                             "ssh-user",
                             "persist-credentials",
                             "path",
                             "clean",
                             "filter",
                             "sparse-checkout",
                             "sparse-checkout-cone-mode",
                             "fetch-depth",
                             "fetch-tags",
                             "show-progress",
                             "reference",
                             "lfs",
                             "submodules",
                             "set-safe-directory",
                             "github-server-url"});
  warn_unexpected_inputs(inputs, k_action, context);

  if (inputs.has("repository")) {
    std::string wanted = inputs.get("repository");
    auto own = context.env.find("GITHUB_REPOSITORY");
    if (own == context.env.end() || own->second.empty()) {
      log_warning(context, fmt::format("cannot tell whether repository '{}' is this run's "
                                       "repository; checking out {}",
                                       wanted, context.repository.string()));
    } else if (!same_repository_name(wanted, own->second)) {
      return fail(ErrorCode::unsupported,
                  "cannot check out repository '{}': kiln has no network and checks out only "
                  "the run's own repository ('{}')",
                  wanted, own->second);
    }
  }
  KILN_TRY(bool clean, inputs.get_bool("clean", true));
  KILN_TRY(bool fetch_tags, inputs.get_bool("fetch-tags", false));
  KILN_TRY(bool lfs, inputs.get_bool("lfs", false));
  KILN_TRY(bool cone, inputs.get_bool("sparse-checkout-cone-mode", true));
  KILN_TRY(std::int64_t depth, inputs.get_int("fetch-depth", 1));
  if (depth < 0) {
    return fail(ErrorCode::invalid_input, "input 'fetch-depth' must be 0 or more, got {}", depth);
  }
  std::string submodules = inputs.get("submodules", "false");
  std::transform(submodules.begin(), submodules.end(), submodules.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lfs) log_warning(context, "input 'lfs' is ignored: kiln has no Git LFS server to fetch from");
  if (inputs.has("filter")) {
    log_warning(context, "input 'filter' is ignored: the local fetch takes complete objects");
  }

  fs::path workspace = absolute_under(fs::current_path(), context.workspace.string());
  fs::path dir = absolute_under(workspace, inputs.get("path"));
  if (!is_within(dir, workspace)) {
    return fail(ErrorCode::invalid_input, "Repository path '{}' is not under '{}'",
                inputs.get("path"), workspace.string());
  }
  if (context.repository.empty()) {
    return fail(ErrorCode::invalid_input, "the run has no local repository to check out");
  }
  KILN_TRY(auto target, resolve_target(inputs, context));

  fs::path repository = absolute_under(fs::current_path(), context.repository.string());
  std::string url = "file://" + repository.string();
  log_line(context, fmt::format("Checking out {} ({}) into {}", target.qualified_ref(), target.sha,
                                dir.string()));
  KILN_TRY_VOID(prepare_directory(dir, url, clean, context));
  KILN_TRY_VOID(fetch(dir, target, depth, fetch_tags));

  auto sparse = inputs.get_lines("sparse-checkout");
  if (!sparse.empty()) {
    std::vector<std::string> args{"sparse-checkout", "set", cone ? "--cone" : "--no-cone", "--"};
    args.insert(args.end(), sparse.begin(), sparse.end());
    KILN_TRY_VOID(git_ok(args, dir, "git sparse-checkout"));
  } else {
    // A re-used checkout may have been sparse before.
    KILN_TRY(auto disabled, run_git({"sparse-checkout", "disable"}, dir));
    (void)disabled;
  }
  KILN_TRY_VOID(checkout_target(dir, target));
  if (submodules == "true" || submodules == "recursive") {
    KILN_TRY_VOID(update_submodules(dir, submodules == "recursive", depth, context));
  }

  KILN_TRY(auto head, git_step({"log", "-1", "--format=%H %s"}, dir, "git log"));
  std::string line = first_line(head.out);
  std::string head_sha = line.substr(0, line.find(' '));
  if (head_sha != target.sha) {
    return fail(ErrorCode::internal, "checkout ended on {} instead of {}", head_sha, target.sha);
  }
  log_line(context, fmt::format("HEAD is now at {}{}", head_sha.substr(0, 7),
                                line.substr(std::min(line.size(), head_sha.size()))));

  ActionResult result;
  result.outputs = {{"ref", target.qualified_ref()}, {"commit", target.sha}};
  return result;
}

}  // namespace kiln::exec
